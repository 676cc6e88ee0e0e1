import { type EntityManager, ORG_FILTER, sqlOf, type Tables } from '@crm/db';
import {
  AliasNode,
  AndNode,
  BinaryOperationNode,
  ColumnNode,
  type Compilable,
  type DeleteQueryNode,
  DummyDriver,
  IdentifierNode,
  type InsertQueryNode,
  type JoinNode,
  Kysely,
  type KyselyPlugin,
  type MergeQueryNode,
  OnNode,
  type OperationNode,
  OperationNodeTransformer,
  OperatorNode,
  ParensNode,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryId,
  type QueryResult,
  ReferenceNode,
  type RootOperationNode,
  SelectQueryNode,
  sql,
  TableNode,
  type UnknownRow,
  type UpdateQueryNode,
  ValueNode,
  WhereNode,
} from 'kysely';
import { type PrepareOptions, prepareQuery } from './prepared-query.ts';

/**
 * A unit of work of `orgId`'s: every ORM read of `em` is scoped to it, and `currentOrg` (so `orgQuery` and
 * `orgDb`) reads it back. The one place an organization is set on a unit of work; returns `em`.
 */
export function scopeToOrg(em: EntityManager, orgId: string): EntityManager {
  em.setFilterParams(ORG_FILTER, { orgId });
  return em;
}

/**
 * A unit of work of `orgId`'s beside `em` (in its transaction, when one is open), `em`'s own scope left as
 * it is: for code given an organization by its caller (the CLI's `--org`, the limits' store).
 */
export function orgFork(em: EntityManager, orgId: string): EntityManager {
  return scopeToOrg(em.fork({ keepTransactionContext: true }), orgId);
}

/**
 * The caller's organization in this unit of work: where the ORM's filter reads it too (the request's filter
 * parameters, set at authentication). Read models take it from here, through `orgQuery`/`orgDb`.
 */
export function currentOrg(em: EntityManager): string {
  const params = em.getFilterParams<{ orgId?: string }>(ORG_FILTER);
  if (!params?.orgId) throw new Error('no organization in this unit of work');
  return params.orgId;
}

/**
 * Every table that holds an organization's rows, by its `org_id` column (a test compares this list with
 * the schema, so a new tenant table cannot be left out).
 */
export const TENANT_TABLES: ReadonlySet<string> = new Set([
  'activities',
  'activity_signal_hours',
  'api_keys',
  'audit_log',
  'companies',
  'company_counts',
  'contact_counts',
  'contacts',
  'custom_fields',
  'custom_indexed_values',
  'custom_unique_values',
  'deal_analyses',
  'deal_close_days',
  'deal_closes',
  'deal_counts',
  'deal_stakeholders',
  'deals',
  'engagement_links',
  'engagements',
  'erasure_receipts',
  'field_history',
  'invitations',
  'organization_quotas',
  'outbox_events',
  'pipeline_stages',
  'pipelines',
  'saved_views',
  'sync_changes',
  'usage_alerts',
  'usage_counters',
  'usage_daily',
  'users',
  'webhook_attempts',
  'webhook_deliveries',
  'webhook_endpoints',
]);

/**
 * The tables without an `org_id` column, each for its reason: the organizations themselves, sign-in
 * records (scoped through their user), idempotency records (scoped by API key), and the server's own.
 * The test requires every table to be in one list or the other, so a new one is a decision, not a default.
 */
export const UNSCOPED_TABLES: ReadonlySet<string> = new Set([
  'accounts',
  'idempotency_keys',
  'mikro_orm_migrations',
  'organizations',
  'server_secrets',
  'sessions',
  'sync_marks',
  'verifications',
]);

/**
 * The typed query builder (Kysely, as MikroORM 7 exposes it) scoped to the caller's organization: every
 * tenant table a select, update or delete reads (FROM, inner and left joins, subqueries, UPDATE … FROM,
 * DELETE … USING) gets `<table or alias>.org_id = <organization>` added by the builder itself, so a query
 * cannot forget it nor shift its parameters. What it cannot scope it refuses rather than run: raw SQL in
 * FROM or a join, right/full/cross joins of a tenant table, inserts and merges. Raw SQL fragments in
 * conditions are the caller's (a table named only inside `sql\`…\`` is not seen). The one way to scope a
 * query written with the builder; on the request path, through `orgQuery` (compiled once).
 */
export function orgDb(em: EntityManager): Kysely<Tables> {
  return sqlOf(em).withPlugin(new OrgScopePlugin(currentOrg(em)));
}

/**
 * A builder that compiles only (it has no connection), scoped to `orgId` as `orgQuery` scopes: for the
 * bench's baseline, which runs the service's SQL text without the service (apps/bench/src/baseline-server.ts).
 */
export function compileOnlyOrgDb(orgId: string): Kysely<Tables> {
  return new Kysely<Tables>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (db) => new PostgresIntrospector(db),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  }).withPlugin(new OrgScopePlugin(orgId));
}

/**
 * The query builder without the organization's scope: every organization's rows. The one door across
 * organizations, for what crosses them by nature (authentication by a key's hash before any organization
 * is known, the CLI's listings of every organization, an organization's own row, the usage flush, …).
 * `reason` says why at the call: the source test (org-scope.test.ts) lists every use with its reason, so
 * a new one is a decision made there, not a default.
 */
export function unscopedDb(em: EntityManager, _reason: string): Kysely<Tables> {
  return sqlOf(em);
}

/**
 * Waits for, then holds until the transaction ends, the lock named `name` of the caller's organization (a
 * PostgreSQL advisory lock keyed by the name and the organization): writers that must not interleave (one
 * organization's pipeline changes, a schema change, the claim of a company's domain) take turns on it,
 * while other organizations' writers do not wait. The one way locks are taken; call it in a transaction.
 */
export async function lockForOrg(tx: EntityManager, name: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${name}), hashtext(${currentOrg(tx)}))`.execute(sqlOf(tx));
}

/**
 * Shortens the statement timeout of the rest of `tx`'s transaction to `ms`, never lengthening it (a
 * configured DATABASE_QUERY_TIMEOUT_MS below it stays): for reads that may scan an organization's rows.
 * PostgreSQL's; the embedded database takes the setting and has no timer behind it.
 */
export async function limitStatementTime(tx: EntityManager, ms: number): Promise<void> {
  await sql`select set_config('statement_timeout', (case when t = 0 then ${ms} else least(t, ${ms}) end)::int::text, true)
            from (select extract(epoch from current_setting('statement_timeout')::interval) * 1000 as t) s`.execute(
    sqlOf(tx),
  );
}

/** Where a prepared query's organization goes, until a call puts its own there. */
const ORG = Symbol('organization');

/**
 * A query written with the scoped builder (as `orgDb` scopes it: a read, or an update or delete of the
 * organization's rows), compiled once per shape and run with each call's organization and arguments
 * (`prepareQuery` says how its arguments are written). The way to write the request paths' SQL.
 */
export function orgQuery<A extends Record<string, unknown>, R>(
  build: (db: Kysely<Tables>, args: A) => Compilable<R>,
  options: PrepareOptions = {},
): (em: EntityManager, args: A) => Promise<R[]> {
  return prepareQuery('orgQuery', build, {
    ...options,
    plugin: new OrgScopePlugin(ORG),
    fixed: { marker: ORG, value: currentOrg },
  });
}

class OrgScopePlugin implements KyselyPlugin {
  readonly #transformer: OrgScopeTransformer;
  constructor(orgId: string | typeof ORG) {
    this.#transformer = new OrgScopeTransformer(orgId);
  }
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return this.#transformer.transformNode(args.node, args.queryId);
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

/** Joins whose ON condition removes rows of the joined table: the organization's condition may go there. */
const FILTERING_JOINS = new Set(['InnerJoin', 'LeftJoin', 'LateralInnerJoin', 'LateralLeftJoin']);

class OrgScopeTransformer extends OperationNodeTransformer {
  readonly #orgId: string | typeof ORG;
  constructor(orgId: string | typeof ORG) {
    super();
    this.#orgId = orgId;
  }

  /**
   * The name a tenant table is referred to by in its query (its alias, else its name); undefined for a
   * table without organizations or a subquery (scoped on its own). Anything else, a raw SQL fragment in
   * FROM or a join, is refused: the builder cannot see what it reads.
   */
  #tenantName(node: OperationNode): string | undefined {
    if (TableNode.is(node))
      return TENANT_TABLES.has(node.table.identifier.name) ? node.table.identifier.name : undefined;
    if (AliasNode.is(node) && TableNode.is(node.node) && IdentifierNode.is(node.alias))
      return TENANT_TABLES.has(node.node.table.identifier.name) ? node.alias.name : undefined;
    if (AliasNode.is(node) && SelectQueryNode.is(node.node)) return undefined;
    const kind = AliasNode.is(node) ? node.node.kind : node.kind;
    throw new Error(`orgDb: cannot scope a ${kind} in FROM or a join; use a table or a subquery`);
  }

  #scope(name: string): OperationNode {
    return BinaryOperationNode.create(
      ReferenceNode.create(ColumnNode.create('org_id'), TableNode.create(name)),
      OperatorNode.create('='),
      ValueNode.create(this.#orgId),
    );
  }

  /** `(<condition>) and <scope>`: in brackets, so a raw `a or b` cannot take the scope into one branch. */
  #and(condition: OperationNode | undefined, scope: OperationNode): OperationNode {
    return condition ? AndNode.create(ParensNode.create(condition), scope) : scope;
  }

  #where(where: WhereNode | undefined, tables: readonly OperationNode[]): WhereNode | undefined {
    let condition = where?.where;
    for (const table of tables) {
      const name = this.#tenantName(table);
      if (name !== undefined) condition = this.#and(condition, this.#scope(name));
    }
    return condition ? WhereNode.create(condition) : undefined;
  }

  #joins(joins: readonly JoinNode[] | undefined): readonly JoinNode[] | undefined {
    return joins?.map((join) => {
      const name = this.#tenantName(join.table);
      if (name === undefined) return join;
      // A right, full or cross join keeps the joined table's rows whatever its ON says.
      if (!FILTERING_JOINS.has(join.joinType))
        throw new Error(`orgDb: cannot scope a ${join.joinType} of ${name}; use an inner or left join`);
      return { ...join, on: OnNode.create(this.#and(join.on?.on, this.#scope(name))) };
    });
  }

  protected override transformSelectQuery(node: SelectQueryNode, queryId?: QueryId): SelectQueryNode {
    const out = super.transformSelectQuery(node, queryId);
    return { ...out, where: this.#where(out.where, out.from?.froms ?? []), joins: this.#joins(out.joins) };
  }

  protected override transformUpdateQuery(node: UpdateQueryNode, queryId?: QueryId): UpdateQueryNode {
    const out = super.transformUpdateQuery(node, queryId);
    const tables = [...(out.table ? [out.table] : []), ...(out.from?.froms ?? [])];
    return { ...out, where: this.#where(out.where, tables), joins: this.#joins(out.joins) };
  }

  protected override transformDeleteQuery(node: DeleteQueryNode, queryId?: QueryId): DeleteQueryNode {
    const out = super.transformDeleteQuery(node, queryId);
    const tables = [...out.from.froms, ...(out.using?.tables ?? [])];
    return { ...out, where: this.#where(out.where, tables), joins: this.#joins(out.joins) };
  }

  // Inserts name their organization themselves (and an upsert's conflict target could be another's row);
  // a merge reads and writes on both sides. Neither goes through the scoped builder.
  protected override transformInsertQuery(): InsertQueryNode {
    throw new Error('orgDb: inserts set org_id themselves; use sqlOf(em) for them');
  }

  protected override transformMergeQuery(): MergeQueryNode {
    throw new Error('orgDb: merge is not scoped; use sqlOf(em) with explicit org_id conditions');
  }
}
