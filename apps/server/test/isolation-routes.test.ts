import { KEPT_AGGREGATES, OPERATIONS, type Operation, TENANT_TABLES } from '@crm/api';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  describeOnEachDatabase,
  MISSING_ID,
  startTestServer,
  type TestOrg,
  type TestServer,
} from './harness.ts';
import { mcpClient } from './mcp-client.ts';
import { type OperationInput, viaMcp, viaRest, viaTrpc } from './operation-doors.ts';
import { eventually, type Receiver, startReceiver } from './webhook-receiver.ts';

/**
 * Every operation of the route table with a path parameter, called by organization A with the id of one of
 * organization B's real records, answers exactly what it answers for an id nobody has (404 not_found), on
 * REST, tRPC and MCP, and changes nothing anywhere. Generated from OPERATIONS: a new `{id}` route is
 * covered without a word here, and fails until MAKERS knows how to make the record its parameter names.
 * What isolation.test.ts checks beyond ids (lists, searches, ids in bodies, usage) stays there.
 */

/**
 * The kind of record a path parameter names: the collection before it (`/deals/{id}`: deals;
 * `/custom-fields/{object}/{key}`: custom-fields).
 */
function kindOf(op: Operation, param: string): string {
  const segments = op.path.split('/');
  const before = segments.slice(0, segments.indexOf(`{${param}}`)).filter((s) => !s.startsWith('{'));
  return before.at(-1) ?? '';
}

/** Path parameters that name no record but one of a few fixed values, the same in every organization. */
const FIXED_PARAMS: Record<string, string> = { object: 'deals' };

/** What names no record of a kind: an id nobody has, or a key nobody defined. */
const MISSING: Record<string, string> = { 'custom-fields': 'never_defined' };
const missingOf = (kind: string) => MISSING[kind] ?? MISSING_ID;

/** Every path parameter of every operation that names a record, with the kind of record it names. */
const CASES = OPERATIONS.flatMap((op) =>
  op.pathParams
    .filter((param) => !(param in FIXED_PARAMS))
    .map((param) => ({ op, param, kind: kindOf(op, param) })),
);

type Made = Record<string, string>;
type Maker = (s: TestServer, org: TestOrg, made: Made, receiver: Receiver) => Promise<string>;

async function created(s: TestServer, org: TestOrg, path: string, json: unknown): Promise<string> {
  const res = await s.api(path, { method: 'POST', key: org.apiKey, json });
  expect(res.status, res.text).toBe(201);
  return res.body.data.id;
}

/**
 * How to make a real record of each kind, in an organization, in this order: each maker may use what the
 * ones before it made (a deal's creation is delivered to the webhook made first).
 */
const MAKERS: Array<[kind: string, make: Maker]> = [
  [
    'webhooks',
    (s, org, _made, receiver) =>
      created(s, org, '/webhooks', { url: receiver.url(`/${org.orgId}`), events: ['deal.created'] }),
  ],
  [
    'pipelines',
    (s, org) =>
      created(s, org, '/pipelines', {
        name: `Isolated pipeline of ${org.orgId}`,
        stages: [{ name: 'Only' }],
      }),
  ],
  ['stages', (s, org, made) => created(s, org, `/pipelines/${made.pipelines}/stages`, { name: 'Isolated' })],
  ['companies', (s, org) => created(s, org, '/companies', { name: `Isolated company of ${org.orgId}` })],
  ['deals', (s, org) => created(s, org, '/deals', { title: `Isolated deal of ${org.orgId}` })],
  [
    'custom-fields',
    async (s, org) => {
      // A key of this organization's alone: the other's calls with it must find nothing.
      const key = `isolated_${org.orgId.replace(/-/g, '').slice(-12)}`;
      const res = await s.api(`/custom-fields/${FIXED_PARAMS.object}`, {
        method: 'POST',
        key: org.apiKey,
        json: { key, type: 'text' },
      });
      expect(res.status, res.text).toBe(201);
      return key;
    },
  ],
  [
    'contacts',
    (s, org, made) => created(s, org, '/contacts', { name: 'Isolated Contact', deal_id: made.deals }),
  ],
  // A deal's stakeholder is named by its contact's id.
  ['stakeholders', async (_s, _org, made) => made.contacts as string],
  [
    'activities',
    (s, org, made) =>
      created(s, org, '/activities', {
        type: 'call',
        subject: 'Isolated call',
        participants: [made.contacts],
        links: [
          { type: 'deal', id: made.deals },
          { type: 'company', id: made.companies },
        ],
      }),
  ],
  [
    'views',
    (s, org) =>
      created(s, org, '/views', {
        name: 'Isolated view',
        object: 'deals',
        filter: { field: 'title', op: 'contains', value: 'Isolated' },
      }),
  ],
  [
    'events',
    (s, org) =>
      eventually('the deal.created event in the feed', async () => {
        const feed = await s.api('/events', { key: org.apiKey });
        return feed.body.data.find((e: { type: string }) => e.type === 'deal.created')?.id as
          | string
          | undefined;
      }),
  ],
  [
    'deliveries',
    (s, org, made) =>
      eventually('the deal.created delivery, succeeded', async () => {
        const list = await s.api(`/webhooks/${made.webhooks}/deliveries`, { key: org.apiKey });
        return list.body.data.find((d: { status: string }) => d.status === 'succeeded')?.id as
          | string
          | undefined;
      }),
  ],
];

/**
 * Tables whose rows move by themselves while the test runs, whatever a call does: the limits' counts,
 * a key's last use, and the kept analytics sums the hourly upkeep folds. Every other tenant table's rows
 * of both organizations must be the same after a call as before it.
 */
const MOVING_ON_THEIR_OWN = new Set([
  'usage_counters',
  'usage_daily',
  'usage_alerts',
  'api_keys',
  ...KEPT_AGGREGATES,
]);
const COMPARED_TABLES = [...TENANT_TABLES].filter((t) => !MOVING_ON_THEIR_OWN.has(t));

describeOnEachDatabase(
  (label) => `another organization's id in a path answers as a missing one, on ${label}`,
  (driver) => {
    let s: TestServer;
    let receiver: Receiver;
    let client: Client;
    /** The caller's records (for the other parameters of a path) and the other organization's. */
    const own: Made = {};
    const foreign: Made = {};

    /** Every row of both organizations in the compared tables, each as JSON, sorted. */
    async function everyRow(): Promise<Record<string, string[]>> {
      const rows: Record<string, string[]> = {};
      for (const table of COMPARED_TABLES) {
        const found = await s.sql(`select * from ${table} where org_id in (?, ?)`, [
          s.orgA.orgId,
          s.orgB.orgId,
        ]);
        rows[table] = found
          .map((row) => JSON.stringify(row, (_, v) => (typeof v === 'bigint' ? v.toString() : v)))
          .sort();
      }
      return rows;
    }

    beforeAll(async () => {
      // Webhooks deliver to a local receiver, which answers 200: every delivery ends `succeeded` and stays.
      s = await startTestServer(driver, {
        CRM_WEBHOOKS_ALLOW_PRIVATE: 'true',
        CRM_WEBHOOKS_POLL_INTERVAL_MS: '50',
      });
      receiver = await startReceiver();
      for (const [org, made] of [
        [s.orgA, own],
        [s.orgB, foreign],
      ] as const)
        for (const [kind, make] of MAKERS) made[kind] = await make(s, org, made, receiver);
      // Nothing left in flight: every event placed in its feed and fanned out, every delivery done.
      await eventually('every event placed and fanned out, every delivery done', async () => {
        const [busy] = await s.sql<{ n: unknown }>(
          `select (select count(*) from outbox_events where dispatched_at is null or position is null)
                + (select count(*) from webhook_deliveries where status = 'pending') as n`,
        );
        return Number(busy?.n) === 0 ? true : undefined;
      });
      client = await mcpClient(s.url, s.orgA.apiKey);
    });
    afterAll(async () => {
      await client?.close();
      await receiver?.close();
      await s?.stop();
    });

    it('knows how to make a record of every kind a path parameter names', () => {
      expect(CASES.length).toBeGreaterThanOrEqual(13);
      const known = new Set(MAKERS.map(([kind]) => kind));
      const unknown = CASES.filter((c) => !known.has(c.kind)).map(
        (c) =>
          `${c.op.method} ${c.op.path}: {${c.param}} names a record of "${c.kind}"; add a maker to MAKERS`,
      );
      expect(unknown).toEqual([]);
    });

    for (const { op, param, kind } of CASES)
      it(`${op.method} ${op.path}, {${param}} one of another organization's ${kind}`, async () => {
        const theirs = foreign[kind];
        if (!theirs)
          throw new Error(`no record of "${kind}" for {${param}} of ${op.method} ${op.path}: add a maker`);
        // The path's other parameters are the caller's own records: only `param` is not found.
        const input = (id: string): OperationInput => ({
          ...Object.fromEntries(op.pathParams.map((p) => [p, FIXED_PARAMS[p] ?? own[kindOf(op, p)]])),
          [param]: id,
          ...(op.takesBody ? exampleBody(op) : {}),
        });
        const before = await everyRow();

        const rest = { foreign: await viaRest(s, s.orgA.apiKey, op, input(theirs)) };
        const missing = await viaRest(s, s.orgA.apiKey, op, input(missingOf(kind)));
        expect(missing.status, missing.text).toBe(404);
        expect(missing.body.code).toBe('not_found');
        expect({ status: rest.foreign.status, body: rest.foreign.body }).toEqual({
          status: missing.status,
          body: missing.body,
        });

        const trpc = await viaTrpc(s, s.orgA.apiKey, op, input(theirs));
        expect(trpc).toMatchObject({ status: 404, code: 'not_found' });
        expect(trpc).toEqual(await viaTrpc(s, s.orgA.apiKey, op, input(missingOf(kind))));

        const mcp = await viaMcp(client, op, input(theirs));
        expect(mcp).toMatchObject({ isError: true, _meta: { error: { code: 'not_found' } } });
        expect(mcp).toEqual(await viaMcp(client, op, input(missingOf(kind))));

        expect(await everyRow()).toEqual(before);
      });
  },
);

/** A body the operation takes (its input's first example), so the call is refused for its id alone. */
function exampleBody(op: Operation): OperationInput {
  const example = (op.input?.meta()?.examples as OperationInput[] | undefined)?.[0];
  if (!example)
    throw new Error(`${op.method} ${op.path} takes a body: give its input an example to call it with`);
  return example;
}
