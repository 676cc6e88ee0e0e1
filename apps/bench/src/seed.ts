import { createCustomField, createOrganizationWithKey, orgFork } from '@crm/api';
import { type DatabaseConfig, openDatabase } from '@crm/db';
import { CUSTOM_FIELDS, customValuesSql } from './custom-fields.ts';

export interface SeededOrg {
  orgId: string;
  apiKey: string;
}

export interface SeedResult {
  orgs: SeededOrg[];
  /** The organizations with 20 custom fields on deals, every deal holding a value of each (see `seed`). */
  customOrgs: SeededOrg[];
  /** A sample of the first organization's deal ids, for GET /deals/{id}. */
  dealIds: string[];
  /** 2-4 letter substrings that match deals or contacts of the first organization. */
  searchTerms: string[];
  seconds: number;
}

/** Comma-separated words, newlines allowed. */
const list = (text: string) =>
  text
    .split(',')
    .map((w) => w.trim())
    .filter(Boolean);

const PRODUCTS = list(`
  Platform, Analytics, Cloud Migration, Security Suite, Data Warehouse, CRM Rollout, Support Plan,
  Onboarding, Mobile App, API Gateway, Payments, Logistics Suite, Marketing Automation, Training,
  Hardware Refresh, Consulting, Compliance Audit, Backup Service, Network Upgrade, License`);
const KINDS = list(`
  renewal, expansion, pilot, upgrade, new business, multi-year deal, Q1 deal, Q2 deal, Q3 deal,
  Q4 deal, enterprise tier, team plan, proof of concept`);
const COMPANIES = list(`
  Acme, Globex, Initech, Umbrella, Stark, Wayne, Wonka, Tyrell, Cyberdyne, Soylent, Hooli,
  Pied Piper, Vandelay, Massive Dynamic, Aperture, Black Mesa, Oscorp, Gringotts, Monarch, Nakatomi,
  Sirius, Zenith, Northwind, Contoso, Fabrikam, Blue Harbor, Red Rock, Silver Lake, Granite,
  Evergreen, Quantum, Bluebird`);
const SUFFIXES = list(`
  Inc, Labs, Group, Systems, Holdings, Logistics, Foods, Energy, Health, Bank, Media, Robotics,
  Partners, Capital, Software, Retail, Motors`);
const FIRST_NAMES = list(`
  James, Mary, Robert, Patricia, John, Jennifer, Michael, Linda, David, Elizabeth, William, Barbara,
  Richard, Susan, Joseph, Jessica, Thomas, Sarah, Carlos, Karen, Wei, Aisha, Hiroshi, Fatima, Olga,
  Mateo, Priya, Lars, Amara, Yusuf, Ingrid, Diego, Chloe, Noah, Zoe, Ravi, Elena, Kwame, Sofia, Liam`);
const LAST_NAMES = list(`
  Smith, Johnson, Williams, Brown, Jones, Garcia, Miller, Davis, Rodriguez, Martinez, Hernandez,
  Lopez, Gonzalez, Wilson, Anderson, Thomas, Taylor, Moore, Jackson, Martin, Lee, Thompson, White,
  Nguyen, Kim, Okafor, Schmidt, Rossi, Kowalski, Tanaka, Patel, Silva, Novak, Larsen, Dubois, Haddad,
  Ivanova, Mensah, Costa, Fischer`);
const JOB_TITLES = list(`
  CEO, CTO, CFO, VP Sales, VP Engineering, Head of Operations, IT Director, Procurement Manager,
  Product Manager, Data Engineer, Security Officer, Marketing Director, Account Manager,
  Legal Counsel, Office Manager`);
const ROLE_TYPES = list(`
  economic_buyer, champion, technical_buyer, influencer, end_user, blocker, unknown`);
const OWNERS = list(`
  Alex Morgan, Sam Rivera, Jordan Blake, Taylor Kim, Casey Nguyen, Riley Shah`);
const SOURCES = list(`
  website, referral, outbound, event, partner, inbound call`);

/** Candidate search terms; those that match nothing are dropped after seeding. */
const SEARCH_CANDIDATES = list(`
  ac, lo, an, ri, ren, acm, glo, clou, data, sec, ana, pil, hoo, mark, son, eng, vp, ma, lee,
  tana, wei, pate, labs, bank, q3, tier, upg, pla`);

/** A SQL text[] literal of constant words (none contain quotes or question marks). */
const words = (list: readonly string[]) =>
  `array[${list.map((w) => `'${w.replaceAll("'", "''")}'`).join(', ')}]`;
/** The (1-based) element of a literal array picked by an integer SQL expression. */
const pick = (list: readonly string[], expr: string) => `(${words(list)})[1 + ((${expr}) % ${list.length})]`;

/**
 * Creates the organizations through the API package (default pipeline, stages and key, as `crm org create`
 * does), then bulk-inserts deals, two contacts per deal and one 'deal_created' activity per deal with
 * generate_series, so the database does the work in three statements per organization.
 *
 * `customOrgs` more organizations (issue 29's scenarios) get the 20 custom fields of `custom-fields.ts` on
 * deals (through the API package, as POST /custom-fields/deals defines them) and the same deals as the
 * plain ones, in order (custom organization i is plain organization i's twin: same titles, values, dates),
 * each holding a value of every field (its external_id unique), claimed by the database's trigger as any
 * write's are.
 */
export async function seed(
  database: DatabaseConfig,
  opts: { orgs: number; dealsPerOrg: number; customOrgs?: number },
): Promise<SeedResult> {
  const started = performance.now();
  const db = await openDatabase(database, 'bench-seed');
  try {
    const conn = db.orm.em.getConnection();
    const orgs: SeededOrg[] = [];
    const customOrgs: SeededOrg[] = [];
    for (let i = 0; i < opts.orgs + (opts.customOrgs ?? 0); i++) {
      const custom = i >= opts.orgs;
      // A custom organization's deals are those of its plain twin.
      const o = custom ? (i - opts.orgs) % opts.orgs : i;
      const created = await createOrganizationWithKey(
        db.orm.em.fork(),
        custom ? `Bench organization ${o + 1} with custom fields` : `Bench organization ${o + 1}`,
      );
      (custom ? customOrgs : orgs).push({ orgId: created.org_id, apiKey: created.api_key });
      if (custom)
        for (const field of CUSTOM_FIELDS)
          await createCustomField(orgFork(db.orm.em.fork(), created.org_id), 'deals', field);
      const [stage] = await conn.execute<{ stage_id: string; pipeline_id: string; name: string }[]>(
        `select s.id as stage_id, s.pipeline_id, s.name
           from pipeline_stages s join pipelines p on p.id = s.pipeline_id
          where p.org_id = ? and p.is_default
          order by s.position limit 1`,
        [created.org_id],
      );
      if (!stage) throw new Error(`organization ${created.org_id} has no default pipeline stage`);

      // g runs 1..n; the newest deal has the smallest g. Offsets by o make the two orgs differ (not twins).
      const g = `(g + ${o * 7})`;
      await conn.execute(
        `insert into deals (id, org_id, title, company_name, value, currency, lifecycle_stage, pipeline_id, stage_id,
                            owner_name, contact_name, contact_email, lead_source, last_activity_at, created_at, custom)
         select gen_random_uuid(), ?, t.title, t.company, t.value, 'USD', 'lead', ?, ?,
                t.owner, t.contact, lower(replace(t.contact, ' ', '.')) || '@' || t.domain, t.source, t.at, t.at,
                ${custom ? customValuesSql('t.n', `'SEED-${o + 1}-' || t.n`) : `'{}'::jsonb`}
           from (
             select ${pick(PRODUCTS, g)} || ' ' || ${pick(KINDS, `${g} / ${PRODUCTS.length}`)} as title,
                    ${pick(COMPANIES, `${g} * 7`)} || ' ' || ${pick(SUFFIXES, `${g} * 13 / ${COMPANIES.length}`)} as company,
                    lower(${pick(COMPANIES, `${g} * 7`)}) || '.example' as domain,
                    round(((${g} * 7919) % 250000 + 500)::numeric, 2) as value,
                    ${pick(OWNERS, `${g} * 3`)} as owner,
                    ${pick(FIRST_NAMES, `${g} * 11`)} || ' ' || ${pick(LAST_NAMES, `${g} * 17 / 3`)} as contact,
                    ${pick(SOURCES, `${g} * 5`)} as source,
                    now() - g * interval '47 minutes' as at,
                    g as n
               from generate_series(1, ${Math.trunc(opts.dealsPerOrg)}) g
           ) t`,
        [created.org_id, stage.pipeline_id, stage.stage_id],
      );
      await conn.execute(
        `insert into contacts (id, org_id, deal_id, name, email, title, phone, role_type, created_at)
         select gen_random_uuid(), d.org_id, d.id, c.first || ' ' || c.last,
                lower(c.first) || '.' || lower(c.last) || '@' || split_part(d.contact_email, '@', 2),
                ${pick(JOB_TITLES, 'd.rn * 2 + n')}, '+1-555-' || lpad(((d.rn * 2 + n) % 10000)::text, 4, '0'),
                ${pick(ROLE_TYPES, 'd.rn + n')}, d.created_at + n * interval '1 second'
           from (select id, org_id, contact_email, created_at, row_number() over (order by created_at) as rn
                   from deals where org_id = ?) d
           cross join generate_series(1, 2) n
           cross join lateral (select ${pick(FIRST_NAMES, '(d.rn * 2 + n) * 7 + 3')} as first,
                                      ${pick(LAST_NAMES, '(d.rn * 2 + n) * 13 / 5 + n')} as last) c`,
        [created.org_id],
      );
      await conn.execute(
        `insert into activities (id, org_id, deal_id, type, description, created_at)
         select gen_random_uuid(), org_id, id, 'deal_created',
                'Deal "' || title || '" created in stage ' || ?::text, created_at
           from deals where org_id = ?`,
        [stage.name, created.org_id],
      );
    }
    await conn.execute('analyze');

    // As after any bulk load: planner statistics for both servers, whichever database runs them.
    await conn.execute('analyze');
    const first = orgs[0];
    if (!first) throw new Error('no organization seeded');
    const ids = await conn.execute<{ id: string }[]>(
      'select id from deals where org_id = ? order by md5(id::text) limit 2000',
      [first.orgId],
    );
    const searchTerms: string[] = [];
    for (const term of SEARCH_CANDIDATES) {
      const pattern = `%${term}%`;
      const [row] = await conn.execute<{ hit: boolean }[]>(
        `select exists (select 1 from deals where org_id = ? and (title ilike ? or company_name ilike ?))
             or exists (select 1 from contacts where org_id = ? and (name ilike ? or email ilike ? or title ilike ?)) as hit`,
        [first.orgId, pattern, pattern, first.orgId, pattern, pattern, pattern],
      );
      if (row?.hit) searchTerms.push(term);
    }
    return {
      orgs,
      customOrgs,
      dealIds: ids.map((r) => r.id),
      searchTerms,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await db.close();
  }
}
