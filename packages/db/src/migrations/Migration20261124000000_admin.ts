import { Migration } from '@mikro-orm/migrations';

/**
 * The admin area: people who sign in to the dashboard (better-auth's user, session, account and
 * verification tables, renamed to this schema's snake_case), invitations, the audit log, who created
 * each API key, and calls per UTC day for the usage chart.
 */
export class Migration20261124000000_admin extends Migration {
  override name = 'Migration20261124000000_admin';

  override up(): void {
    // One person belongs to one organization; e-mails are stored lower-cased, so unique is case-blind.
    this.addSql(`create table users (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      role text not null check (role in ('admin', 'member')),
      name text not null,
      email text not null unique,
      email_verified boolean not null default false,
      image text null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );`);
    this.addSql('create index users_org on users (org_id, created_at);');

    this.addSql(`create table sessions (
      id uuid primary key,
      user_id uuid not null references users (id) on delete cascade,
      token text not null unique,
      expires_at timestamptz not null,
      ip_address text null,
      user_agent text null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );`);
    this.addSql('create index sessions_user on sessions (user_id);');

    this.addSql(`create table accounts (
      id uuid primary key,
      user_id uuid not null references users (id) on delete cascade,
      account_id text not null,
      provider_id text not null,
      access_token text null,
      refresh_token text null,
      id_token text null,
      access_token_expires_at timestamptz null,
      refresh_token_expires_at timestamptz null,
      scope text null,
      password text null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );`);
    this.addSql('create index accounts_user on accounts (user_id);');

    this.addSql(`create table verifications (
      id uuid primary key,
      identifier text not null,
      value text not null,
      expires_at timestamptz not null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );`);
    this.addSql('create index verifications_identifier on verifications (identifier);');

    // An invitation link carries a random token; only its SHA-256 is stored.
    this.addSql(`create table invitations (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      token_hash text not null unique,
      role text not null check (role in ('admin', 'member')),
      email text null,
      invited_by text null,
      created_at timestamptz not null,
      expires_at timestamptz not null,
      accepted_at timestamptz null
    );`);
    this.addSql('create index invitations_org on invitations (org_id, created_at);');

    // `actor` is kept as written (an e-mail, or "CLI"): the log outlives the people in it.
    this.addSql(`create table audit_log (
      id uuid primary key,
      org_id uuid not null references organizations (id) on delete cascade,
      at timestamptz not null,
      actor text not null,
      action text not null,
      target text null,
      details text null
    );`);
    this.addSql('create index audit_log_org_recent on audit_log (org_id, at desc, id desc);');

    this.addSql('alter table api_keys add column created_by text null;');

    // Secrets the server makes for itself once (the session-cookie signing key), shared by every instance.
    this.addSql(
      'create table server_secrets (name text primary key, value text not null, created_at timestamptz not null);',
    );

    this.addSql(`create table usage_daily (
      org_id uuid not null references organizations (id) on delete cascade,
      day date not null,
      quota text not null check (quota in ('api_calls', 'ai_calls')),
      used bigint not null check (used >= 0),
      primary key (org_id, day, quota)
    );`);
  }
}
