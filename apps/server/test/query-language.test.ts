import { issueApiKey, OPERATIONS, orgFork } from '@crm/api';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DRIVERS,
  describeOnEachDatabase,
  startTestServer,
  type TestOrg,
  type TestServer,
} from './harness.ts';
import { mcpClient } from './mcp-client.ts';
import { viaTrpc } from './operation-doors.ts';

// biome-ignore lint/suspicious/noExplicitAny: rows and trees are the API's JSON
type Row = Record<string, any>;
type Node = Row;

/** A seeded PRNG (mulberry32): the same trees on every run, a failing one reproducible. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T;
  return { next, int, pick };
}

const REGIONS = ['emea', 'apac', 'amer'];
const TAGS = ['a', 'b', 'c', 'd'];
const SEGMENTS = ['alpha', 'bravo', 'charlie', 'delta'];
const ROLES = ['economic_buyer', 'champion', 'technical_buyer', 'end_user', 'blocker'];
const SENTIMENTS = ['positive', 'neutral', 'negative'];

/** The filter language's types of the fields the tests use (what docs/api/query.md says of each). */
const DEAL_TYPES: Record<string, string> = {
  id: 'uuid',
  title: 'string',
  company_name: 'string',
  value: 'number',
  currency: 'string',
  win_probability: 'number',
  lifecycle_stage: 'string',
  stage_id: 'uuid',
  stage_name: 'string',
  stage_type: 'enum',
  lead_source: 'string',
  expected_close_date: 'date-time',
  created_at: 'date-time',
  updated_at: 'date-time',
  'custom.region': 'enum',
  'custom.arr': 'number',
  'custom.tags': 'array',
  'custom.renewal': 'date',
  'custom.kickoff': 'date-time',
  'custom.strategic': 'boolean',
  'custom.segment': 'string',
  // Unique: eq and in read the claims of its values (custom_unique_values), the rest the JSON.
  'custom.ext': 'string',
  // Indexed twins of the fields above, each holding its twin's values: the operators their index serves
  // read custom_indexed_values (a lone condition counts from it alone), the rest the JSON; each answer must
  // be the reference's, so the twin's.
  'custom.region_ix': 'enum',
  'custom.arr_ix': 'number',
  'custom.tags_ix': 'array',
  'custom.renewal_ix': 'date',
  'custom.kickoff_ix': 'date-time',
  'custom.strategic_ix': 'boolean',
  'custom.segment_ix': 'string',
  'stakeholders.role_type': 'enum',
  'stakeholders.sentiment': 'enum',
  'stakeholders.name': 'string',
  'stakeholders.custom.seniority': 'enum',
  'stakeholders.custom.seniority_ix': 'enum',
};

const fieldOf = (row: Row, field: string): unknown => {
  if (field.startsWith('custom.')) return row.custom?.[field.slice(7)] ?? null;
  return row[field] ?? null;
};

/** A comparable form of a value of `type` (date-times as instants). */
const comparable = (type: string, v: unknown) => (type === 'date-time' ? Date.parse(v as string) : v);

/** One condition on one value, as docs/api/query.md defines it: an empty value meets only neq, nin and is_null true. */
function holds(type: string, actual: unknown, op: string, value: unknown): boolean {
  if (op === 'is_null') return (actual === null) === value;
  if (op === 'neq') return actual === null || comparable(type, actual) !== comparable(type, value);
  if (op === 'nin')
    return (
      actual === null || !(value as unknown[]).some((v) => comparable(type, v) === comparable(type, actual))
    );
  if (actual === null) return false;
  const a = comparable(type, actual) as number | string;
  const v = comparable(type, value) as number | string;
  switch (op) {
    case 'eq':
      return a === v;
    case 'lt':
      return a < v;
    case 'lte':
      return a <= v;
    case 'gt':
      return a > v;
    case 'gte':
      return a >= v;
    case 'between': {
      const [low, high] = (value as unknown[]).map((x) => comparable(type, x) as number | string);
      return a >= (low as number | string) && a <= (high as number | string);
    }
    case 'in':
      return (value as unknown[]).some((x) => comparable(type, x) === a);
    case 'contains':
      return String(a).toLowerCase().includes(String(value).toLowerCase());
    case 'starts_with':
      return String(a).toLowerCase().startsWith(String(value).toLowerCase());
    case 'has_any':
      return (value as string[]).some((x) => (actual as string[]).includes(x));
    case 'has_all':
      return (value as string[]).every((x) => (actual as string[]).includes(x));
  }
  throw new Error(`no reference for ${op}`);
}

/** The reference evaluator: the tree over a deal (its stakeholders from `contactsOf`). */
function evaluate(
  node: Node,
  row: Row,
  contactsOf: (row: Row) => Row[],
  types: Record<string, string>,
): boolean {
  if (node.and) return node.and.every((n: Node) => evaluate(n, row, contactsOf, types));
  if (node.or) return node.or.some((n: Node) => evaluate(n, row, contactsOf, types));
  if (node.not) return !evaluate(node.not, row, contactsOf, types);
  const type = types[node.field] as string;
  const hop = /^(stakeholders|deal)\.(.+)$/.exec(node.field);
  if (hop) return contactsOf(row).some((c) => holds(type, fieldOf(c, hop[2] as string), node.op, node.value));
  return holds(type, fieldOf(row, node.field), node.op, node.value);
}

const OPS_BY_TYPE: Record<string, string[]> = {
  string: ['eq', 'neq', 'in', 'nin', 'contains', 'starts_with', 'is_null'],
  number: ['eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'between', 'in', 'nin', 'is_null'],
  'date-time': ['eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'between', 'is_null'],
  date: ['eq', 'neq', 'lt', 'lte', 'gt', 'gte', 'between', 'is_null'],
  enum: ['eq', 'neq', 'in', 'nin', 'is_null'],
  uuid: ['eq', 'neq', 'in', 'nin', 'is_null'],
  boolean: ['eq', 'neq', 'is_null'],
  array: ['has_any', 'has_all', 'is_null'],
};

describeOnEachDatabase(
  (label) => `the filter and sort language on ${label}`,
  (driver) => {
    let s: TestServer;
    let org: TestOrg;
    let deals: Row[] = [];
    const contacts: Row[] = [];
    const stakeholdersOf = (deal: Row) => contacts.filter((c) => c.deal_id === deal.id);
    const api = (path: string, init: Parameters<TestServer['api']>[1] = {}) =>
      s.api(path, { key: org.apiKey, ...init });
    const list = (params: Record<string, unknown>) => {
      const query = new URLSearchParams(
        Object.entries(params).map(([k, v]): [string, string] => [
          k,
          typeof v === 'string' ? v : JSON.stringify(v),
        ]),
      );
      return api(`/deals?${query}`);
    };
    const ids = (rows: Row[]) => rows.map((r) => r.id);
    /** Every deal a filter keeps, newest first as the API sorts by default. */
    const expected = (filter: Node) =>
      deals.filter((d) => evaluate(filter, d, stakeholdersOf, DEAL_TYPES)).map((d) => d.id);

    beforeAll(async () => {
      s = await startTestServer(driver);
      org = await s.newOrg('query language');
      const define = async (object: string, field: Row) => {
        const res = await api(`/custom-fields/${object}`, { method: 'POST', json: field });
        expect(res.status, res.text).toBe(201);
      };
      await define('deals', { key: 'region', type: 'select', options: REGIONS.map((value) => ({ value })) });
      await define('deals', { key: 'arr', type: 'number' });
      await define('deals', { key: 'tags', type: 'multi_select', options: TAGS.map((value) => ({ value })) });
      await define('deals', { key: 'renewal', type: 'date' });
      await define('deals', { key: 'kickoff', type: 'datetime' });
      await define('deals', { key: 'strategic', type: 'boolean' });
      await define('deals', { key: 'segment', type: 'text' });
      await define('deals', { key: 'ext', type: 'text', unique: true });
      await define('deals', {
        key: 'region_ix',
        type: 'select',
        indexed: true,
        options: REGIONS.map((value) => ({ value })),
      });
      await define('deals', { key: 'arr_ix', type: 'number', indexed: true });
      await define('deals', {
        key: 'tags_ix',
        type: 'multi_select',
        indexed: true,
        options: TAGS.map((value) => ({ value })),
      });
      await define('deals', { key: 'renewal_ix', type: 'date', indexed: true });
      await define('deals', { key: 'kickoff_ix', type: 'datetime', indexed: true });
      await define('deals', { key: 'strategic_ix', type: 'boolean', indexed: true });
      // Indexed but not unique: two deals may hold one value.
      await define('deals', { key: 'segment_ix', type: 'text', indexed: true });
      await define('contacts', {
        key: 'seniority',
        type: 'select',
        options: ['junior', 'senior'].map((value) => ({ value })),
      });
      await define('contacts', {
        key: 'seniority_ix',
        type: 'select',
        indexed: true,
        options: ['junior', 'senior'].map((value) => ({ value })),
      });
      // Org B holds the same keys with other types: a cast on its rows must never fail org A's query, and
      // its indexed values (the same words) never reach org A's.
      for (const key of [
        'arr',
        'renewal',
        'kickoff',
        'strategic',
        'tags',
        'arr_ix',
        'region_ix',
        'segment_ix',
      ])
        await s.api(`/custom-fields/deals`, {
          method: 'POST',
          key: s.orgB.apiKey,
          json: { key, type: 'text', indexed: key.endsWith('_ix') },
        });
      await s.api('/deals/batch', {
        method: 'POST',
        key: s.orgB.apiKey,
        json: {
          items: [
            {
              title: 'B deal',
              value: 50000,
              custom: {
                arr: 'lots',
                renewal: 'soon',
                kickoff: 'x',
                strategic: 'yes',
                tags: 'a',
                arr_ix: '5000',
                region_ix: 'emea',
                segment_ix: 'alpha',
              },
            },
          ],
        },
      });

      const r = prng(42);
      const stages = (await api('/pipeline/stages')).body.data as Row[];
      const items = Array.from({ length: 60 }, (_, i) => {
        const custom: Row = {};
        if (r.next() < 0.8) custom.region = r.pick(REGIONS);
        if (r.next() < 0.8) custom.arr = r.int(20) * 5000 + (r.next() < 0.2 ? 0.5 : 0);
        if (r.next() < 0.7) custom.tags = TAGS.filter(() => r.next() < 0.4);
        if (r.next() < 0.7) custom.renewal = `2027-0${1 + r.int(9)}-1${r.int(9)}`;
        if (r.next() < 0.7)
          custom.kickoff = new Date(Date.UTC(2026, r.int(12), 1 + r.int(28), r.int(24))).toISOString();
        if (r.next() < 0.7) custom.strategic = r.next() < 0.5;
        if (r.next() < 0.8) custom.segment = r.pick(SEGMENTS);
        if (r.next() < 0.8) custom.ext = `EXT-${i}`;
        for (const key of ['region', 'arr', 'tags', 'renewal', 'kickoff', 'strategic', 'segment'])
          if (key in custom) custom[`${key}_ix`] = custom[key];
        return {
          title: `${r.pick(['Acme', 'Globex', 'Initech', 'Umbrella'])} ${r.pick(['rollout', 'renewal', 'pilot'])} ${String(i).padStart(2, '0')}`,
          ...(r.next() < 0.85 ? { value: r.int(30) * 1000 } : {}),
          ...(r.next() < 0.7
            ? { company_name: r.pick(['Acme Corp', 'Globex', 'Initech Ltd', 'acme labs']) }
            : {}),
          ...(r.next() < 0.6 ? { lead_source: r.pick(['Website', 'Referral', 'Event']) } : {}),
          ...(r.next() < 0.6
            ? { expected_close_date: new Date(Date.UTC(2027, r.int(12), 1 + r.int(28))).toISOString() }
            : {}),
          stage_id: (r.pick(stages) as Row).id,
          custom,
        };
      });
      const created = await api('/deals/batch', { method: 'POST', json: { items } });
      expect(created.status, created.text).toBe(201);
      // Spread creation times (some equal: the id breaks the tie) and fill fields no create sets.
      await s.sql(
        `update deals set created_at = created_at - (abs(hashtext(title)) % 20) * interval '1 hour',
           win_probability = case when abs(hashtext(title || 'p')) % 5 = 0 then null else abs(hashtext(title || 'w')) % 101 end
         where org_id = ?`,
        [org.orgId],
      );
      const items2 = (created.body.data as Row[]).flatMap((deal, i) =>
        Array.from({ length: i % 3 }, () => ({
          deal_id: deal.id,
          name: `${r.pick(['Ann', 'Bob', 'Cy', 'Di'])} ${r.int(100)}`,
          role_type: r.pick(ROLES),
          ...(r.next() < 0.7
            ? ((seniority) => ({ custom: { seniority, seniority_ix: seniority } }))(
                r.pick(['junior', 'senior']),
              )
            : {}),
        })),
      );
      const added = await api('/contacts/batch', { method: 'POST', json: { items: items2 } });
      expect(added.status, added.text).toBe(201);
      for (const c of added.body.data as Row[])
        if (r.next() < 0.6) {
          const res = await api(`/contacts/${c.id}`, {
            method: 'PATCH',
            json: { sentiment: r.pick(SENTIMENTS) },
          });
          expect(res.status, res.text).toBe(200);
        }
      deals = (await api('/deals?limit=100')).body.data;
      expect(deals).toHaveLength(60);
      for (let offset = 0; ; offset += 100) {
        const page = (await api(`/contacts?limit=100&offset=${offset}`)).body.data as Row[];
        contacts.push(...page);
        if (page.length < 100) break;
      }
    });
    afterAll(async () => {
      await s?.stop();
    });

    /** Values to compare a field with: some its rows hold, one none does. */
    function sampleValues(field: string, r: ReturnType<typeof prng>): unknown[] {
      const type = DEAL_TYPES[field] as string;
      const hop = /^stakeholders\.(.+)$/.exec(field);
      const held = (
        hop ? contacts.map((c) => fieldOf(c, hop[1] as string)) : deals.map((d) => fieldOf(d, field))
      ).filter((v) => v !== null);
      const some = [...new Set(type === 'array' ? held.flat() : held)];
      const pool = some.length > 0 ? some : ['x'];
      return [
        r.pick(pool),
        r.pick(pool),
        type === 'number' ? 12345.5 : type === 'array' ? 'd' : r.pick(pool),
      ];
    }

    function condition(field: string, op: string, r: ReturnType<typeof prng>): Node {
      const type = DEAL_TYPES[field] as string;
      const [a, b] = sampleValues(field, r);
      switch (op) {
        case 'is_null':
          return { field, op, value: r.next() < 0.5 };
        case 'between': {
          const sorted = [a, b].sort((x, y) =>
            (comparable(type, x) as number) < (comparable(type, y) as number) ? -1 : 1,
          );
          return { field, op, value: sorted };
        }
        case 'in':
        case 'nin':
        case 'has_any':
        case 'has_all':
          return { field, op, value: [...new Set([a, b])] };
        case 'contains':
          return { field, op, value: String(a).slice(1, 4).toUpperCase() };
        case 'starts_with':
          return { field, op, value: String(a).slice(0, 3).toLowerCase() };
        default:
          return { field, op, value: a };
      }
    }

    it('each operator on each type of field keeps exactly the deals the reference keeps, newest first', async () => {
      const r = prng(7);
      let nonEmpty = 0;
      for (const [field, type] of Object.entries(DEAL_TYPES))
        for (const op of OPS_BY_TYPE[type] as string[]) {
          const filter = condition(field, op, r);
          const res = await list({ filter, limit: 100 });
          expect(res.status, `${JSON.stringify(filter)}: ${res.text}`).toBe(200);
          const want = expected(filter);
          expect(ids(res.body.data), JSON.stringify(filter)).toEqual(want);
          expect(res.body.meta.total, JSON.stringify(filter)).toBe(want.length);
          if (want.length > 0 && want.length < deals.length) nonEmpty++;
        }
      // The values are drawn from the rows: most conditions keep some deals and leave others.
      expect(nonEmpty).toBeGreaterThan(60);
    });

    /** A random tree of and/or/not over `fields`, up to 3 levels. */
    function randomTree(r: ReturnType<typeof prng>, fields: string[], depth = 0): Node {
      if (depth >= 3 || r.next() < 0.35) {
        const field = r.pick(fields);
        return condition(field, r.pick(OPS_BY_TYPE[DEAL_TYPES[field] as string] as string[]), r);
      }
      const kind = r.pick(['and', 'or', 'not']);
      if (kind === 'not') return { not: randomTree(r, fields, depth + 1) };
      return { [kind]: Array.from({ length: 1 + r.int(3) }, () => randomTree(r, fields, depth + 1)) };
    }

    it('100 random trees of and/or/not: the API answers what a JS evaluator computes over all rows', async () => {
      const r = prng(2026);
      const fields = Object.keys(DEAL_TYPES);
      for (let i = 0; i < 100; i++) {
        const filter = randomTree(r, fields);
        const res = await list({ filter, limit: 100 });
        expect(res.status, `${JSON.stringify(filter)}: ${res.text}`).toBe(200);
        const want = expected(filter);
        expect(ids(res.body.data), JSON.stringify(filter)).toEqual(want);
        expect(res.body.meta.total).toBe(want.length);
      }
    });

    it('100 random trees over the event feed: GET /events?filter= keeps the deal.created events whose data the reference keeps', async () => {
      // The records as emitted (before the seed's SQL changed created_at and win_probability): the server
      // evaluates these in JS (query/evaluate.ts), the reference here is the test's own.
      const events = (await api('/events?types=deal.created&limit=500')).body.data as Row[];
      expect(events).toHaveLength(60);
      const r = prng(2027);
      const fields = Object.keys(DEAL_TYPES).filter((f) => !f.startsWith('stakeholders.'));
      let kept = 0;
      for (let i = 0; i < 100; i++) {
        const filter = randomTree(r, fields);
        const res = await api(
          `/events?types=deal.created&limit=500&filter=${encodeURIComponent(JSON.stringify(filter))}`,
        );
        expect(res.status, `${JSON.stringify(filter)}: ${res.text}`).toBe(200);
        const want = events.filter((e) => evaluate(filter, e.data, () => [], DEAL_TYPES)).map((e) => e.id);
        expect(
          res.body.data.map((e: Row) => e.id),
          JSON.stringify(filter),
        ).toEqual(want);
        if (want.length > 0 && want.length < events.length) kept++;
      }
      expect(kept).toBeGreaterThan(30);
      // A stakeholder is not in a deal's data: refused, naming the node.
      const res = await api(
        `/events?types=deal.created&filter=${encodeURIComponent(
          JSON.stringify({
            and: [
              { field: 'value', op: 'gt', value: 1 },
              { field: 'stakeholders.role_type', op: 'eq', value: 'champion' },
            ],
          }),
        )}`,
      );
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(
        /^filter\/and\/1\/field: stakeholders\.role_type reads a related record/,
      );
    });

    it('sorts by several keys, empty values last, the id breaking ties; cursor and offset pages walk it exactly', async () => {
      const compare = (sort: string) => (x: Row, y: Row) => {
        const keys = sort.split(',').map((k) => ({ desc: k.startsWith('-'), field: k.replace(/^-/, '') }));
        for (const { desc, field } of keys) {
          const type = DEAL_TYPES[field] as string;
          const a = fieldOf(x, field);
          const b = fieldOf(y, field);
          if (a === b) continue;
          if (a === null) return 1;
          if (b === null) return -1;
          const [ca, cb] = [comparable(type, a), comparable(type, b)] as [number, number];
          if (ca === cb) continue;
          return (ca < cb ? -1 : 1) * (desc ? -1 : 1);
        }
        const last = keys.at(-1)?.desc ?? true;
        return (x.id < y.id ? -1 : 1) * (last ? -1 : 1);
      };
      const filter = { field: 'title', op: 'neq', value: 'nothing' };
      for (const sort of [
        '-value,created_at',
        'custom.arr',
        '-custom.region,-custom.renewal',
        'custom.segment,-win_probability',
        'custom.strategic,custom.kickoff',
        '-expected_close_date',
        '-created_at',
      ]) {
        const want = ids([...deals].sort(compare(sort)));
        const all = await list({ sort, limit: 100 });
        expect(all.status, all.text).toBe(200);
        expect(ids(all.body.data), sort).toEqual(want);
        // Cursor pages of 7, with and without a filter (which keeps all here).
        for (const extra of [{}, { filter }]) {
          const walked: string[] = [];
          let after: string | null = null;
          for (let i = 0; i < 20; i++) {
            const page = await list({ sort, limit: 7, ...extra, ...(after ? { after } : {}) });
            expect(page.status, page.text).toBe(200);
            expect(page.body.meta.total).toBe(60);
            walked.push(...ids(page.body.data));
            after = page.body.meta.next_cursor;
            if (!after) break;
          }
          expect(walked, sort).toEqual(want);
        }
        const offsetPage = await list({ sort, limit: 10, offset: 25 });
        expect(ids(offsetPage.body.data), sort).toEqual(want.slice(25, 35));
      }
      // A filter that requires the sort's key (value, which may be empty) pages by one row comparison down
      // its index: the same rows, in the same order, as the sort over the rows it keeps.
      const valued = { field: 'value', op: 'gte', value: 0 };
      const want = ids([...deals].filter((d) => d.value !== null).sort(compare('-value')));
      const walked: string[] = [];
      let after: string | null = null;
      for (let i = 0; i < 20; i++) {
        const page = await list({ sort: '-value', limit: 7, filter: valued, ...(after ? { after } : {}) });
        expect(page.status, page.text).toBe(200);
        walked.push(...ids(page.body.data));
        after = page.body.meta.next_cursor;
        if (!after) break;
      }
      expect(walked).toEqual(want);
      // Without sort, a filter keeps the default order: newest first, as GET /deals answers.
      expect(ids((await list({ filter, limit: 100 })).body.data)).toEqual(ids(deals));
    });

    it('GET ?filter= and POST /deals/query answer the same; the contract parameters combine with the filter', async () => {
      const filter = {
        and: [
          { field: 'value', op: 'gte', value: 5000 },
          {
            or: [
              { field: 'custom.region', op: 'in', value: ['emea', 'apac'] },
              { field: 'stage_type', op: 'eq', value: 'open' },
            ],
          },
        ],
      };
      const viaGet = await list({ filter, sort: '-value', limit: 10 });
      const viaPost = await api('/deals/query', {
        method: 'POST',
        json: { filter, sort: '-value', limit: 10 },
      });
      expect(viaGet.status, viaGet.text).toBe(200);
      expect(viaPost.status, viaPost.text).toBe(200);
      expect(viaPost.body).toEqual(viaGet.body);
      const next = await api('/deals/query', {
        method: 'POST',
        json: { filter, sort: '-value', limit: 10, after: viaGet.body.meta.next_cursor },
      });
      expect(next.body).toEqual(
        (await list({ filter, sort: '-value', limit: 10, after: viaGet.body.meta.next_cursor })).body,
      );

      // lifecycle_stage and pipeline_id AND the filter.
      const lifecycle = deals[0]?.lifecycle_stage as string;
      const combined = await list({ filter, lifecycle_stage: lifecycle, limit: 100 });
      const want = expected(filter).filter(
        (id) => deals.find((d) => d.id === id)?.lifecycle_stage === lifecycle,
      );
      expect(ids(combined.body.data)).toEqual(want);
      expect(combined.body.meta.total).toBe(want.length);
      const pipeline = deals[0]?.pipeline_id as string;
      expect((await list({ filter, pipeline_id: pipeline, limit: 100 })).body.meta.total).toBe(
        expected(filter).filter((id) => deals.find((d) => d.id === id)?.pipeline_id === pipeline).length,
      );
      // A sort alone takes its total from the kept counts: the same number.
      const sortedOnly = await list({ sort: '-value', lifecycle_stage: lifecycle, limit: 100 });
      expect(sortedOnly.body.meta.total).toBe(deals.filter((d) => d.lifecycle_stage === lifecycle).length);
      expect(sortedOnly.body.data).toHaveLength(sortedOnly.body.meta.total);
      // Without filter and sort, GET /deals answers as it always did.
      const plain = await api('/deals?limit=5&offset=3');
      expect(ids(plain.body.data)).toEqual(ids(deals).slice(3, 8));
      expect(plain.body.meta).toEqual({ total: 60, limit: 5, offset: 3, next_cursor: deals[7]?.id });
    });

    it('contacts: fields, custom fields and deal.<field> of their deal, with q and sort', async () => {
      const contactTypes: Record<string, string> = {
        role_type: 'enum',
        sentiment: 'enum',
        name: 'string',
        'custom.seniority': 'enum',
        'custom.seniority_ix': 'enum',
        'deal.title': 'string',
        'deal.stage_id': 'uuid',
        'deal.value': 'number',
        'deal.custom.region': 'enum',
        'deal.custom.region_ix': 'enum',
        'deal.custom.arr_ix': 'number',
      };
      const dealOf = (c: Row) => deals.filter((d) => d.id === c.deal_id);
      const want = (filter: Node) =>
        contacts.filter((c) => evaluate(filter, c, dealOf, contactTypes)).map((c) => c.id);
      const stage = deals[1]?.stage_id as string;
      for (const filter of [
        { field: 'role_type', op: 'in', value: ['champion', 'blocker'] },
        { field: 'sentiment', op: 'neq', value: 'positive' },
        { field: 'custom.seniority', op: 'eq', value: 'senior' },
        // An indexed field of the contact's own (its total read from the index), and of its deal.
        { field: 'custom.seniority_ix', op: 'eq', value: 'senior' },
        { field: 'custom.seniority_ix', op: 'is_null', value: false },
        { and: [{ field: 'custom.seniority_ix', op: 'in', value: ['junior'] }] },
        {
          or: [
            { field: 'deal.custom.region_ix', op: 'in', value: ['emea', 'amer'] },
            { field: 'deal.custom.arr_ix', op: 'between', value: [10000, 40000] },
          ],
        },
        { field: 'deal.stage_id', op: 'eq', value: stage },
        {
          and: [
            { field: 'deal.value', op: 'gte', value: 10000 },
            { not: { field: 'deal.custom.region', op: 'eq', value: 'emea' } },
          ],
        },
        {
          or: [
            { field: 'deal.title', op: 'contains', value: 'ACME' },
            { field: 'name', op: 'starts_with', value: 'an' },
          ],
        },
      ]) {
        const res = await api(`/contacts?limit=100&filter=${encodeURIComponent(JSON.stringify(filter))}`);
        expect(res.status, res.text).toBe(200);
        expect(ids(res.body.data), JSON.stringify(filter)).toEqual(want(filter));
        expect(res.body.meta.total).toBe(want(filter).length);
        const posted = await api('/contacts/query', { method: 'POST', json: { filter, limit: 100 } });
        expect(posted.body).toEqual(res.body);
      }
      // q ANDs with the filter; the total is then exact (no total_exact).
      const filter = { field: 'role_type', op: 'neq', value: 'champion' };
      const res = await api(`/contacts?limit=100&q=ann&filter=${encodeURIComponent(JSON.stringify(filter))}`);
      const matching = want(filter).filter((id) => /ann/i.test(contacts.find((c) => c.id === id)?.name));
      expect(ids(res.body.data)).toEqual(matching);
      expect(res.body.meta).toEqual({ total: matching.length, limit: 100, offset: 0, next_cursor: null });
      // Sorted by name then newest; cursor pages walk it.
      const sorted = await api('/contacts/query', {
        method: 'POST',
        json: { sort: 'role_type,-created_at', limit: 100 },
      });
      expect(sorted.status, sorted.text).toBe(200);
      const order = [...contacts].sort(
        (x, y) =>
          (x.role_type < y.role_type ? -1 : x.role_type > y.role_type ? 1 : 0) ||
          Date.parse(y.created_at) - Date.parse(x.created_at) ||
          (x.id < y.id ? 1 : -1),
      );
      expect(ids(sorted.body.data)).toEqual(ids(order));
    });

    it('strict: every mistake is a 400 naming the node by its JSON pointer; nothing is dropped', async () => {
      const refused = async (filter: unknown, message: string, extra: Row = {}) => {
        const text = typeof filter === 'string' ? filter : JSON.stringify(filter);
        const res = await api(`/deals?${new URLSearchParams({ filter: text, ...extra })}`);
        expect(res.status, text).toBe(400);
        expect(res.body).toEqual({ code: 'invalid_request', error: message });
        // The body's filter is an object by its schema: an array is refused there, in zod's words.
        if (typeof filter !== 'string' && !Array.isArray(filter)) {
          const posted = await api('/deals/query', { method: 'POST', json: { filter, ...extra } });
          expect(posted.status).toBe(400);
          expect(posted.body).toEqual({ code: 'invalid_request', error: message });
        }
      };
      await refused(
        {
          and: [
            { field: 'value', op: 'gte', value: 1 },
            { field: 'custom.regoin', op: 'in', value: ['emea'] },
          ],
        },
        'filter/and/1/field: unknown field "custom.regoin"; did you mean "custom.region"?',
      );
      await refused(
        { field: 'valeu', op: 'eq', value: 1 },
        'filter/field: unknown field "valeu"; did you mean "value"?',
      );
      await refused(
        { or: [{ field: 'value', op: 'contains', value: '1' }] },
        'filter/or/0/op: "contains" does not apply to value (a number field); use one of eq, neq, lt, lte, gt, gte, between, in, nin, is_null',
      );
      await refused(
        { field: 'value', op: 'gte', value: '10000' },
        'filter/value: expected a number, got string',
      );
      await refused(
        { field: 'custom.region', op: 'in', value: ['emea', 'mars'] },
        'filter/value/1: "mars" is not a value of custom.region ("emea", "apac", "amer")',
      );
      await refused(
        { field: 'stage_type', op: 'eq', value: 'opn' },
        'filter/value: "opn" is not a value of stage_type ("open", "won", "lost")',
      );
      await refused(
        { field: 'created_at', op: 'gt', value: 'yesterday' },
        'filter/value: "yesterday" is not an ISO 8601 date-time with a time zone',
      );
      await refused(
        { field: 'custom.renewal', op: 'lt', value: '2027-02-30' },
        'filter/value: "2027-02-30" is not a date (YYYY-MM-DD)',
      );
      await refused(
        { field: 'value', op: 'between', value: [1] },
        'filter/value: expected [low, high], got 1 value',
      );
      await refused(
        { field: 'value', op: 'between', value: [500, 100] },
        'filter/value: low 500 is above high 100: give [low, high]',
      );
      await refused(
        { field: 'value', op: 'eq', value: null },
        'filter/value: expected a value, got null (use "op": "is_null" for empty fields)',
      );
      await refused({ field: 'value', op: 'eq' }, 'filter/value: Required');
      await refused(
        { field: 'value', op: 'like', value: 1 },
        'filter/op: unknown operator "like"; one of eq, neq, lt, lte, gt, gte, between, in, nin, contains, starts_with, is_null, has_any, has_all',
      );
      await refused(
        { field: 'value', op: 'eq', value: 1, extra: true },
        'filter: unknown key "extra" (a condition has field, op and value)',
      );
      await refused({ and: [] }, 'filter/and: expected at least one condition');
      await refused({ and: {} }, 'filter/and: expected an array, got object');
      await refused({ and: [], or: [] }, 'filter: a group has one key (and, or or not); also got "or"');
      await refused([], 'filter: expected an object (a condition or an and/or/not group), got array');
      await refused(
        { not: { not: { not: { not: { not: { field: 'value', op: 'eq', value: 1 } } } } } },
        'filter/not/not/not/not/not: nested deeper than 4 levels of and/or/not',
      );
      const leaf = { field: 'value', op: 'gte', value: 1 };
      await api('/deals/query', { method: 'POST', json: { filter: { and: Array(50).fill(leaf) } } }).then(
        (res) => expect(res.status, res.text).toBe(200),
      );
      await refused({ and: Array(51).fill(leaf) }, 'filter/and/50: more than 50 conditions in one filter');
      await refused(
        { field: 'custom.tags', op: 'has_any', value: ['z'] },
        'filter/value/0: "z" is not a value of custom.tags ("a", "b", "c", "d")',
      );
      await refused(
        { field: 'stakeholders.role_type', op: 'eq', value: 'king' },
        expect.stringContaining('filter/value: "king" is not a value of stakeholders.role_type') as never,
      );
      await refused('{"field": "value",', expect.stringMatching(/^filter: not valid JSON \(/) as never);
      // Sort mistakes name their position.
      for (const [sort, message] of [
        ['-valeu', 'sort/0: unknown field "valeu"; did you mean "value"?'],
        ['value,custom.tags', 'sort/1: "custom.tags" cannot be sorted by (a multi-select field)'],
        ['value,-value', 'sort/1: "value" is named twice'],
        ['stakeholders.name', 'sort/0: "stakeholders.name" cannot be sorted by (a related record\'s field)'],
        ['value,', 'sort/1: empty key (write field or -field, separated by commas)'],
      ]) {
        const res = await list({ sort: sort as string });
        expect(res.status, sort).toBe(400);
        expect(res.body.error).toBe(message);
      }
      // A cursor that is no deal, or with offset, is refused as the contract list's is.
      const res = await list({ sort: '-value', after: deals[0]?.id, offset: 1 });
      expect(res.body.error).toBe('after: give after or offset, not both');
    });

    it('a filter on related records needs the scope that reads them (403 naming the node)', async () => {
      const fork = () => orgFork(s.running.db.orm.em.fork(), org.orgId);
      const { api_key: dealsOnly } = await issueApiKey(fork(), org.orgId, { scopes: ['deals:read'] });
      const filter = {
        and: [
          { field: 'value', op: 'gte', value: 1 },
          { field: 'stakeholders.sentiment', op: 'eq', value: 'negative' },
        ],
      };
      const refused = await s.api('/deals/query', { method: 'POST', key: dealsOnly, json: { filter } });
      expect(refused.status, refused.text).toBe(403);
      expect(refused.body).toEqual({
        code: 'insufficient_scope',
        error:
          'filter/and/1/field: stakeholders.sentiment reads stakeholders, which needs the scope contacts:read; this API key has deals:read',
      });
      // The deal's own fields need nothing more; with contacts:read too, the related ones answer.
      expect(
        (await s.api('/deals/query', { method: 'POST', key: dealsOnly, json: { filter: filter.and[0] } }))
          .status,
      ).toBe(200);
      const { api_key: both } = await issueApiKey(fork(), org.orgId, {
        scopes: ['deals:read', 'contacts:read'],
      });
      const allowed = await s.api('/deals/query', {
        method: 'POST',
        key: both,
        json: { filter, limit: 100 },
      });
      expect(ids(allowed.body.data)).toEqual(expected(filter));
      const { api_key: contactsOnly } = await issueApiKey(fork(), org.orgId, { scopes: ['contacts:read'] });
      const byDeal = await s.api(
        `/contacts?filter=${encodeURIComponent(JSON.stringify({ field: 'deal.value', op: 'gt', value: 0 }))}`,
        { key: contactsOnly },
      );
      expect(byDeal.status).toBe(403);
      expect(byDeal.body.error).toBe(
        'filter/field: deal.value reads deal, which needs the scope deals:read; this API key has contacts:read',
      );
    });

    it('stakeholders.<field> reads the contacts linked to a deal too, in their role on it', async () => {
      // A contact of another deal linked here as the blocker (the link's role, not the contact's own).
      const deal = deals.find((d) => stakeholdersOf(d).length === 0) as Row;
      const other = contacts.find((c) => c.role_type !== 'blocker' && c.deal_id !== deal.id) as Row;
      const linked = await api(`/deals/${deal.id}/stakeholders/${other.id}`, {
        method: 'PUT',
        json: { role_type: 'blocker', sentiment: 'negative' },
      });
      expect(linked.status, linked.text).toBeLessThan(300);
      const filter = {
        and: [
          { field: 'stakeholders.role_type', op: 'eq', value: 'blocker' },
          { field: 'stakeholders.name', op: 'eq', value: other.name },
        ],
      };
      const res = await list({ filter, limit: 100 });
      const want = [...expected(filter), deal.id];
      expect(ids(res.body.data).sort()).toEqual([...new Set(want)].sort());
      // On its own deal the contact keeps its own role.
      const own = await list({
        filter: {
          and: [
            { field: 'id', op: 'eq', value: other.deal_id },
            { field: 'stakeholders.role_type', op: 'eq', value: 'blocker' },
          ],
        },
      });
      expect(ids(own.body.data)).toEqual(
        expected({
          and: [
            { field: 'id', op: 'eq', value: other.deal_id },
            { field: 'stakeholders.role_type', op: 'eq', value: 'blocker' },
          ],
        }),
      );
      expect(
        (await api(`/deals/${deal.id}/stakeholders/${other.id}`, { method: 'DELETE' })).status,
      ).toBeLessThan(300);
      expect(ids((await list({ filter, limit: 100 })).body.data)).toEqual(expected(filter));
    });

    it('company.<field> on deals and contacts: the linked company meets the condition', async () => {
      const company = async (json: Row) => {
        const res = await api('/companies', { method: 'POST', json });
        expect(res.status, res.text).toBe(201);
        return res.body.data.id as string;
      };
      const acme = await company({
        name: 'Acme Industries',
        domain: 'acme-q.example',
        industry: 'Manufacturing',
      });
      const hooli = await company({ name: 'Hooli', domain: 'hooli-q.example', industry: 'Software' });
      const [d1, d2] = deals.slice(0, 2).map((d) => d.id as string);
      for (const [id, companyId] of [
        [d1, acme],
        [d2, hooli],
      ])
        expect((await api(`/deals/${id}`, { method: 'PATCH', json: { company_id: companyId } })).status).toBe(
          200,
        );
      const byIndustry = await list({ filter: { field: 'company.industry', op: 'eq', value: 'Software' } });
      expect(ids(byIndustry.body.data)).toEqual([d2]);
      const notAcme = await list({
        filter: { not: { field: 'company.name', op: 'starts_with', value: 'acme' } },
        limit: 100,
      });
      expect(ids(notAcme.body.data)).toEqual(ids(deals).filter((id) => id !== d1));
      const contact = contacts[0] as Row;
      expect(
        (await api(`/contacts/${contact.id}`, { method: 'PATCH', json: { company_id: hooli } })).status,
      ).toBe(200);
      const linked = await api(
        `/contacts?filter=${encodeURIComponent(JSON.stringify({ field: 'company.domain', op: 'eq', value: 'hooli-q.example' }))}`,
      );
      expect(ids(linked.body.data)).toEqual([contact.id]);
      // Put back: the other tests compare with the deals as seeded.
      for (const id of [d1, d2])
        expect((await api(`/deals/${id}`, { method: 'PATCH', json: { company_id: null } })).status).toBe(200);
      expect(
        (await api(`/contacts/${contact.id}`, { method: 'PATCH', json: { company_id: null } })).status,
      ).toBe(200);
    });

    it('is read-only and offered on tRPC and MCP: the same answer on every door', async () => {
      const filter = { field: 'stakeholders.role_type', op: 'eq', value: 'champion' };
      const rest = await api('/deals/query', { method: 'POST', json: { filter, limit: 100 } });
      expect(ids(rest.body.data)).toEqual(expected(filter));
      const op = OPERATIONS.find((o) => o.operationId === 'deals-query');
      expect(op).toMatchObject({ method: 'POST', readOnly: true, idempotent: true, scope: 'deals:read' });
      const trpc = await fetch(`${s.url}/trpc/deals.query`, {
        method: 'POST',
        headers: { authorization: `Bearer ${org.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ filter, limit: 100 }),
      }).then((r) => r.json() as Promise<{ result: { data: Row } }>);
      expect(trpc.result.data).toEqual(rest.body);
      // The GET list on tRPC takes the filter as JSON text, as REST's query string does.
      const get = await viaTrpc(
        s,
        org.apiKey,
        OPERATIONS.find((o) => o.operationId === 'deals-list') as never,
        {
          filter: JSON.stringify({ field: 'valeu', op: 'eq', value: 1 }),
        },
      );
      expect(get).toMatchObject({
        status: 400,
        code: 'invalid_request',
        message: 'filter/field: unknown field "valeu"; did you mean "value"?',
      });
      let client: Client | undefined;
      try {
        client = await mcpClient(s.url, org.apiKey);
        const { tools } = await client.listTools();
        const dealsQuery = tools.find((t) => t.name === 'deals-query');
        expect(dealsQuery?.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true });
        // The tree is described with the organization's own fields, each operator list by type.
        type Condition = { properties: { field: { enum: string[] }; op: { enum: string[] } } };
        const conditionsOf = (name: string) => {
          const schema = tools.find((t) => t.name === name)?.inputSchema as Row;
          expect(schema.properties.filter.$ref).toBe('#/$defs/filter_node');
          return (schema.$defs.filter_node.anyOf as Array<Condition & Row>).filter((c) => c.properties.field);
        };
        const forField = (name: string, field: string) =>
          conditionsOf(name).find((c) => c.properties.field.enum.includes(field))?.properties.op.enum;
        expect(forField('deals-query', 'custom.region')).toEqual(['eq', 'neq', 'in', 'nin', 'is_null']);
        expect(forField('deals-query', 'custom.tags')).toEqual(['has_any', 'has_all', 'is_null']);
        expect(forField('deals-query', 'value')).toContain('between');
        expect(forField('deals-query', 'stakeholders.custom.seniority')).toContain('in');
        expect(forField('contacts-query', 'custom.seniority')).toContain('eq');
        expect(forField('contacts-query', 'custom.region')).toBeUndefined();
        expect(forField('activities-query', 'links.id')).toContain('eq');
        const byCustom = {
          and: [
            { field: 'custom.region', op: 'in', value: ['emea', 'apac'] },
            { field: 'custom.arr', op: 'gte', value: 20000 },
          ],
        };
        const custom = (await client.callTool({
          name: 'deals-query',
          arguments: { filter: byCustom, limit: 100 },
        })) as CallToolResult;
        expect(custom.isError ?? false).toBe(false);
        expect(ids((custom.structuredContent as Row).data)).toEqual(expected(byCustom));
        const wrong = (await client.callTool({
          name: 'deals-query',
          arguments: { filter: { field: 'custom.regoin', op: 'eq', value: 'emea' } },
        })) as CallToolResult;
        expect(wrong.isError).toBe(true);
        expect((wrong._meta?.error as Row | undefined)?.error).toBe(
          'filter/field: unknown field "custom.regoin"; did you mean "custom.region"?',
        );
        const result = (await client.callTool({
          name: 'deals-query',
          arguments: { filter, limit: 100 },
        })) as CallToolResult;
        expect(result.isError ?? false).toBe(false);
        expect(result.structuredContent).toEqual(rest.body);
      } finally {
        await client?.close();
      }
      // Another organization's rows are never seen, nor their custom values cast.
      const other = await api('/deals/query', {
        method: 'POST',
        json: { filter: { field: 'value', op: 'eq', value: 50000 } },
      });
      expect(ids(other.body.data)).toEqual(expected({ field: 'value', op: 'eq', value: 50000 }));
      const b = await s.api('/deals/query', {
        method: 'POST',
        key: s.orgB.apiKey,
        json: { filter: { field: 'custom.arr', op: 'eq', value: 'lots' }, sort: 'custom.arr' },
      });
      expect(b.status, b.text).toBe(200);
      expect(b.body.data.map((d: Row) => d.title)).toEqual(['B deal']);
    });
  },
);

describe.skipIf(!DRIVERS.find((d) => d.driver === 'postgresql' && !d.skip))(
  'a filtered list over the statement timeout (PostgreSQL)',
  () => {
    let s: TestServer;
    beforeAll(async () => {
      // The statement timeout of other statements stays long: a list that reads unindexed fields has 2 s.
      s = await startTestServer('postgresql', { DATABASE_QUERY_TIMEOUT_MS: '8000' });
    });
    afterAll(async () => {
      await s?.stop();
    });

    it('answers 400 after 2 s naming the fields no index serves, not a 503 to retry', async () => {
      const tier = await s.api('/custom-fields/deals', {
        method: 'POST',
        json: { key: 'tier', type: 'text', indexed: true },
      });
      expect(tier.status, tier.text).toBe(201);
      await s.api('/deals', {
        method: 'POST',
        json: { title: 'Held', notes: 'x', custom: { tier: 'gold' } },
      });
      // A statement held past the timeout: another session locks the table (what a scan of a very large
      // organization's rows would take, made certain).
      const holder = new pg.Client({ connectionString: s.env.DATABASE_URL });
      await holder.connect();
      try {
        await holder.query('begin; lock table deals in access exclusive mode');
        const filter = {
          and: [
            { field: 'notes', op: 'contains', value: 'x' },
            { field: 'lifecycle_stage', op: 'eq', value: 'lead' },
          ],
        };
        const t0 = performance.now();
        const res = await s.api(`/deals?sort=-value&filter=${encodeURIComponent(JSON.stringify(filter))}`);
        const ms = performance.now() - t0;
        expect(res.status, res.text).toBe(400);
        expect(ms).toBeGreaterThan(1_900);
        expect(ms).toBeLessThan(6_000);
        expect(res.body.code).toBe('invalid_request');
        expect(res.body.error).toBe(
          'filter: the list ran over its time limit (2 s at most for a list that reads fields no index serves): no index serves notes, so every deal of the organization is read; add a condition on an indexed field (title, company_name, company_id, value, lifecycle_stage, stage_id, pipeline_id, owner_name, created_at, updated_at, custom.tier (eq, in, is_null false)) (a custom field is indexed with "indexed": true, PATCH /custom-fields/deals/{key}; docs/api/query.md, Speed)',
        );
        // An indexed field's condition its index does not serve (neq keeps the deals without a value)
        // reads the JSON: the same 2 s, naming it.
        const neq = await s.api(
          `/deals?filter=${encodeURIComponent(JSON.stringify({ field: 'custom.tier', op: 'neq', value: 'gold' }))}`,
        );
        expect(neq.status, neq.text).toBe(400);
        expect(neq.body.error).toMatch(
          /^filter: the list ran over its time limit .*: no index serves custom\.tier,/,
        );
      } finally {
        await holder.query('rollback').catch(() => {});
        await holder.end();
      }
      expect((await s.api('/deals?sort=-value')).status).toBe(200);
    });
  },
);
