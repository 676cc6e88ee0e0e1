import { type EntityManager, sqlOf, type Tables } from '@crm/db';
import {
  AliasNode,
  BinaryOperationNode,
  ColumnNode,
  type DeleteQueryNode,
  IdentifierNode,
  JoinNode,
  type Kysely,
  type KyselyPlugin,
  type OperationNode,
  OperationNodeTransformer,
  OperatorNode,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryId,
  type QueryResult,
  ReferenceNode,
  type RootOperationNode,
  type SelectQueryNode,
  TableNode,
  type UnknownRow,
  type UpdateQueryNode,
  ValueNode,
  WhereNode,
} from 'kysely';
import { currentOrg } from './read-model.ts';

/**
 * Every table that holds an organization's rows, by its `org_id` column (a test compares this list with
 * the schema, so a new tenant table cannot be left out).
 */
export const TENANT_TABLES: ReadonlySet<string> = new Set([
  'activities',
  'api_keys',
  'audit_log',
  'contact_counts',
  'contacts',
  'deal_analyses',
  'deal_counts',
  'deals',
  'invitations',
  'organization_quotas',
  'outbox_events',
  'pipeline_stages',
  'pipelines',
  'usage_alerts',
  'usage_counters',
  'usage_daily',
  'users',
  'webhook_attempts',
  'webhook_deliveries',
  'webhook_endpoints',
]);

/**
 * The typed query builder (Kysely, as MikroORM 7 exposes it) scoped to the caller's organization: every
 * tenant table a select, update or delete reads, in its FROM, its joins and its subqueries, gets
 * `<table or alias>.org_id = <organization>` added by the builder itself, so a query cannot forget it
 * nor shift its parameters. The one way to scope a query written with the builder; `orgRows` remains for
 * the raw SQL the builder cannot say (CTE-heavy analytics).
 */
export function orgDb(em: EntityManager): Kysely<Tables> {
  return sqlOf(em).withPlugin(new OrgScopePlugin(currentOrg(em)));
}

class OrgScopePlugin implements KyselyPlugin {
  readonly #transformer: OrgScopeTransformer;
  constructor(orgId: string) {
    this.#transformer = new OrgScopeTransformer(orgId);
  }
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    return this.#transformer.transformNode(args.node, args.queryId);
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    return args.result;
  }
}

class OrgScopeTransformer extends OperationNodeTransformer {
  readonly #orgId: string;
  constructor(orgId: string) {
    super();
    this.#orgId = orgId;
  }

  /** The name a tenant table is referred to by in its query (its alias, else its name), or undefined. */
  #tenantName(node: OperationNode): string | undefined {
    if (TableNode.is(node))
      return TENANT_TABLES.has(node.table.identifier.name) ? node.table.identifier.name : undefined;
    if (AliasNode.is(node) && TableNode.is(node.node) && IdentifierNode.is(node.alias))
      return TENANT_TABLES.has(node.node.table.identifier.name) ? node.alias.name : undefined;
    return undefined;
  }

  #scope(name: string): OperationNode {
    return BinaryOperationNode.create(
      ReferenceNode.create(ColumnNode.create('org_id'), TableNode.create(name)),
      OperatorNode.create('='),
      ValueNode.create(this.#orgId),
    );
  }

  #where(where: WhereNode | undefined, tables: readonly OperationNode[]): WhereNode | undefined {
    let out = where;
    for (const table of tables) {
      const name = this.#tenantName(table);
      if (name === undefined) continue;
      out = out
        ? WhereNode.cloneWithOperation(out, 'And', this.#scope(name))
        : WhereNode.create(this.#scope(name));
    }
    return out;
  }

  protected override transformSelectQuery(node: SelectQueryNode, queryId?: QueryId): SelectQueryNode {
    const out = super.transformSelectQuery(node, queryId);
    return {
      ...out,
      where: this.#where(out.where, out.from?.froms ?? []),
      joins: out.joins?.map((join) => {
        const name = this.#tenantName(join.table);
        return name === undefined ? join : JoinNode.cloneWithOn(join, this.#scope(name));
      }),
    };
  }

  protected override transformUpdateQuery(node: UpdateQueryNode, queryId?: QueryId): UpdateQueryNode {
    const out = super.transformUpdateQuery(node, queryId);
    return { ...out, where: this.#where(out.where, out.table ? [out.table] : []) };
  }

  protected override transformDeleteQuery(node: DeleteQueryNode, queryId?: QueryId): DeleteQueryNode {
    const out = super.transformDeleteQuery(node, queryId);
    return { ...out, where: this.#where(out.where, out.from.froms) };
  }
}
