import { issueApiKey } from '@crm/api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  describeOnEachDatabase,
  MISSING_ID,
  startTestServer,
  type TestOrg,
  type TestServer,
  UUID,
} from './harness.ts';
import { mcpClient } from './mcp-client.ts';
import { eventually } from './webhook-receiver.ts';

/** Pipelines and their stages through the API (docs/api/pipelines.md), as a client sees them. */

interface Stage {
  id: string;
  name: string;
  stage_type: string;
  position: number;
  color: string;
  is_closed: boolean;
  probability: number | null;
  pipeline_id: string;
  rotten_days: number | null;
  deal_count: number;
}
interface Pipeline {
  id: string;
  name: string;
  is_default: boolean;
  created_at: string;
  stages: Stage[];
}
interface FeedEvent {
  type: string;
  data: { id: string; stage_id: string; stage_name: string; lifecycle_stage: string | null };
  changes?: Record<string, { from: unknown; to: unknown }>;
  stage?: { from: { id: string; name: string }; to: { id: string; name: string } };
}

const DAY = 86_400_000;

describeOnEachDatabase(
  (label) => `pipelines and stages on ${label}`,
  (driver) => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer(driver);
    });
    afterAll(async () => {
      await s?.stop();
    });

    const post = (path: string, json: unknown, key?: string) => s.api(path, { method: 'POST', json, key });
    const patch = (path: string, json: unknown, key?: string) => s.api(path, { method: 'PATCH', json, key });
    const del = (path: string, key?: string) => s.api(path, { method: 'DELETE', key });

    async function newPipeline(org: TestOrg, name: string, extra: Record<string, unknown> = {}) {
      const res = await post(
        '/pipelines',
        {
          name,
          stages: [
            { name: 'Intro', probability: 10, rotten_days: 14 },
            { name: 'Pilot', probability: 40, color: '#0ea5e9' },
            { name: 'Signed', stage_type: 'won' },
            { name: 'Dropped', stage_type: 'lost' },
          ],
          ...extra,
        },
        org.apiKey,
      );
      expect(res.status, res.text).toBe(201);
      return res.body.data as Pipeline;
    }

    /** Every event of the organization after `after` (the feed is filled asynchronously). */
    async function eventsAfter(org: TestOrg, after: string | undefined, atLeast: number) {
      return eventually(`${atLeast} events in the feed`, async () => {
        const res = await s.api(`/events?limit=500${after ? `&after=${after}` : ''}`, { key: org.apiKey });
        expect(res.status).toBe(200);
        return res.body.data.length >= atLeast ? (res.body.data as FeedEvent[]) : undefined;
      });
    }
    async function feedEnd(org: TestOrg): Promise<string | undefined> {
      // Every event placed so far (events are positioned in the feed shortly after their commit).
      await eventually('the feed settled', async () => {
        const [row] = await s.sql<{ n: unknown }>(
          'select count(*) as n from outbox_events where org_id = ? and position is null',
          [org.orgId],
        );
        return Number(row?.n) === 0 ? true : undefined;
      });
      const res = await s.api('/events?limit=500', { key: org.apiKey });
      let cursor: string | undefined = res.body.meta.next_cursor ?? undefined;
      let more = res.body.meta.has_more;
      while (more) {
        const next = await s.api(`/events?limit=500&after=${cursor}`, { key: org.apiKey });
        cursor = next.body.meta.next_cursor ?? cursor;
        more = next.body.meta.has_more;
      }
      return cursor;
    }

    /** The kept counts equal a count of the deals, stage by stage, and keep no row of a stage gone. */
    async function expectKeptCountsExact(org: TestOrg) {
      const mismatched = await s.sql(
        `select coalesce(k.stage_id, d.stage_id) as stage_id, k.n as kept, d.n as counted
           from (select stage_id, sum(n) as n, sum(value_sum) as v from deal_counts where org_id = ? group by stage_id) k
           full join (select stage_id, count(*) as n, coalesce(sum(value), 0) as v from deals where org_id = ?
                       group by stage_id) d on d.stage_id = k.stage_id
          where (k.n is distinct from d.n or k.v is distinct from d.v)
            and not (d.n is null and k.n = 0 and k.v = 0 and exists (select 1 from pipeline_stages s where s.id = k.stage_id))`,
        [org.orgId, org.orgId],
      );
      expect(mismatched).toEqual([]);
      const orphans = await s.sql(
        'select stage_id from deal_counts c where org_id = ? and not exists (select 1 from pipeline_stages s where s.id = c.stage_id)',
        [org.orgId],
      );
      expect(orphans).toEqual([]);
    }

    it('creates a pipeline with its stages, lists it after the default, and GET /pipeline/stages still answers the default', async () => {
      const before = (await s.api('/pipeline/stages')).body.data;
      const created = await newPipeline(s.orgA, 'Partnerships');
      expect(created).toEqual({
        id: expect.stringMatching(UUID),
        name: 'Partnerships',
        is_default: false,
        created_at: expect.any(String),
        stages: [
          {
            id: expect.stringMatching(UUID),
            name: 'Intro',
            stage_type: 'open',
            position: 1,
            color: '#94a3b8',
            is_closed: false,
            probability: 10,
            pipeline_id: created.id,
            rotten_days: 14,
            deal_count: 0,
          },
          expect.objectContaining({
            name: 'Pilot',
            position: 2,
            color: '#0ea5e9',
            probability: 40,
            rotten_days: null,
          }),
          expect.objectContaining({
            name: 'Signed',
            position: 3,
            stage_type: 'won',
            is_closed: true,
            probability: 100,
          }),
          expect.objectContaining({
            name: 'Dropped',
            position: 4,
            stage_type: 'lost',
            is_closed: true,
            probability: 0,
          }),
        ],
      });

      const list = await s.api('/pipelines');
      expect(list.status).toBe(200);
      expect(list.body.data.map((p: Pipeline) => [p.name, p.is_default])).toEqual([
        ['Sales pipeline', true],
        ['Partnerships', false],
      ]);
      expect(list.body.data[0].stages.map((x: Stage) => x.name)).toEqual(before.map((x: Stage) => x.name));
      expect((await s.api(`/pipelines/${created.id}`)).body.data).toEqual(created);
      // The contract's endpoint answers exactly what it did.
      expect((await s.api('/pipeline/stages')).body.data).toEqual(before);
      expect(Object.keys(before[0]).sort()).toEqual(
        ['color', 'id', 'is_closed', 'name', 'position', 'probability', 'stage_type'].sort(),
      );

      // Over tRPC too, with the typed client, and as MCP tools.
      const trpc = s.trpc(s.orgA);
      expect((await trpc.pipelines.get.query({ id: created.id })).data).toEqual(created);
      const mcp = await mcpClient(s.url, s.orgA.apiKey);
      try {
        const got = await mcp.callTool({ name: 'pipelines-get', arguments: { id: created.id } });
        expect(got.structuredContent).toEqual({ data: created });
        const added = await mcp.callTool({
          name: 'pipelines-createStage',
          arguments: { id: created.id, name: 'From an agent', position: 1 },
        });
        expect(added.structuredContent).toMatchObject({ data: { name: 'From an agent', position: 1 } });
        const health = await mcp.callTool({
          name: 'pipeline-health',
          arguments: { pipeline_id: created.id },
        });
        expect(health.structuredContent).toMatchObject({ data: { total_deals: 0 } });
      } finally {
        await mcp.close();
      }
    });

    it('puts deals in the new pipeline (its first stage, or the stage named) and counts them per stage', async () => {
      const p = await newPipeline(s.orgA, 'Deals go here');
      const [intro, pilot] = p.stages as [Stage, Stage];
      const first = await post('/deals', { title: 'Into the new pipeline', pipeline_id: p.id, value: 100 });
      expect(first.status, first.text).toBe(201);
      expect(first.body.data).toMatchObject({
        pipeline_id: p.id,
        pipeline_name: 'Deals go here',
        stage_id: intro.id,
        stage_name: 'Intro',
      });
      const second = await post('/deals', {
        title: 'Straight to pilot',
        pipeline_id: p.id,
        stage_id: pilot.id,
      });
      expect(second.body.data).toMatchObject({ stage_id: pilot.id, stage_name: 'Pilot' });
      const again = (await s.api(`/pipelines/${p.id}`)).body.data as Pipeline;
      expect(again.stages.map((x) => x.deal_count)).toEqual([1, 1, 0, 0]);
      // A stage of the new pipeline is no stage of the default one.
      const wrong = await post('/deals', { title: 'Mismatch', stage_id: pilot.id });
      expect(wrong.status).toBe(400);
      expect(wrong.body.error).toMatch(/^stage_id: no such stage in pipeline/);
    });

    it('adds and moves stages keeping positions 1..n, and refuses a position out of range naming it', async () => {
      const p = await newPipeline(s.orgA, 'Reordered');
      const names = async () =>
        ((await s.api(`/pipelines/${p.id}`)).body.data as Pipeline).stages.map((x) => [x.position, x.name]);

      const added = await post(`/pipelines/${p.id}/stages`, { name: 'Security review', position: 2 });
      expect(added.status, added.text).toBe(201);
      expect(added.body.data).toMatchObject({
        name: 'Security review',
        position: 2,
        stage_type: 'open',
        probability: null,
      });
      const atEnd = await post(`/pipelines/${p.id}/stages`, { name: 'Archive', stage_type: 'lost' });
      expect(atEnd.body.data).toMatchObject({ position: 6, probability: 0, is_closed: true });
      expect(await names()).toEqual([
        [1, 'Intro'],
        [2, 'Security review'],
        [3, 'Pilot'],
        [4, 'Signed'],
        [5, 'Dropped'],
        [6, 'Archive'],
      ]);

      const moved = await patch(`/pipelines/${p.id}/stages/${atEnd.body.data.id}`, {
        position: 1,
        name: 'Parked',
        color: '#111111',
      });
      expect(moved.status, moved.text).toBe(200);
      expect(moved.body.data).toMatchObject({ position: 1, name: 'Parked', color: '#111111' });
      const pilot = p.stages[1] as Stage;
      await patch(`/pipelines/${p.id}/stages/${pilot.id}`, { position: 6, rotten_days: 30 });
      expect(await names()).toEqual([
        [1, 'Parked'],
        [2, 'Intro'],
        [3, 'Security review'],
        [4, 'Signed'],
        [5, 'Dropped'],
        [6, 'Pilot'],
      ]);

      const outOfRange = await patch(`/pipelines/${p.id}/stages/${pilot.id}`, { position: 7 });
      expect(outOfRange.status).toBe(400);
      expect(outOfRange.body).toEqual({
        error: 'position: must be between 1 and 6',
        code: 'invalid_request',
      });
      const zero = await post(`/pipelines/${p.id}/stages`, { name: 'Nowhere', position: 0 });
      expect(zero.status).toBe(400);
      expect(zero.body.error).toMatch(/^position: /);
      expect(await names()).toHaveLength(6);
    });

    it('deletes a stage with deals only with move_to; the moved deals get the events and activities of a PATCH', async () => {
      const p = await newPipeline(s.orgA, 'Stage deletes');
      const [intro, pilot, signed] = p.stages as [Stage, Stage, Stage, Stage];
      const ids: string[] = [];
      for (const title of ['Moved one', 'Moved two'])
        ids.push(
          (await post('/deals', { title, pipeline_id: p.id, stage_id: pilot.id, value: 50 })).body.data.id,
        );
      const other = await newPipeline(s.orgA, 'Elsewhere');

      const refused = await del(`/pipelines/${p.id}/stages/${pilot.id}`);
      expect(refused.status).toBe(409);
      expect(refused.body).toEqual({
        error: expect.stringMatching(/^2 deals are in stage "Pilot": pass move_to/),
        code: 'conflict',
      });
      const foreignStage = await del(`/pipelines/${p.id}/stages/${pilot.id}?move_to=${other.stages[0]?.id}`);
      expect(foreignStage.status).toBe(400);
      expect(foreignStage.body.error).toBe(`move_to: no such stage in pipeline ${p.id}`);
      const itself = await del(`/pipelines/${p.id}/stages/${pilot.id}?move_to=${pilot.id}`);
      expect(itself.status).toBe(400);
      expect(itself.body.error).toMatch(/^move_to: /);
      const badId = await del(`/pipelines/${p.id}/stages/${pilot.id}?move_to=nope`);
      expect(badId.status).toBe(400);
      expect(badId.body.error).toMatch(/^move_to: /);
      // Nothing changed.
      expect(
        ((await s.api(`/pipelines/${p.id}`)).body.data as Pipeline).stages.map((x) => x.deal_count),
      ).toEqual([0, 2, 0, 0]);

      // A stage that changes its type would win the deals in it without a move: refused while it has any.
      const retype = await patch(`/pipelines/${p.id}/stages/${pilot.id}`, { stage_type: 'won' });
      expect(retype.status).toBe(409);
      expect(retype.body.error).toMatch(/^stage_type: 2 deals are in stage "Pilot"/);

      const cursor = await feedEnd(s.orgA);
      const deleted = await del(`/pipelines/${p.id}/stages/${pilot.id}?move_to=${signed.id}`);
      expect(deleted.status, deleted.text).toBe(200);
      expect(deleted.body).toEqual({ success: true, moved_deals: 2 });

      const after = (await s.api(`/pipelines/${p.id}`)).body.data as Pipeline;
      expect(after.stages.map((x) => [x.position, x.name, x.deal_count])).toEqual([
        [1, 'Intro', 0],
        [2, 'Signed', 2],
        [3, 'Dropped', 0],
      ]);
      for (const id of ids) {
        const detail = (await s.api(`/deals/${id}`)).body.data;
        expect(detail.deal).toMatchObject({
          stage_id: signed.id,
          stage_name: 'Signed',
          lifecycle_stage: 'customer',
        });
        expect(detail.recent_activities[0]).toMatchObject({
          type: 'stage_changed',
          description: 'Stage changed from Pilot to Signed',
        });
      }
      // deal.updated, deal.stage_changed and deal.won for each, as a PATCH of stage_id gives them.
      const events = await eventsAfter(s.orgA, cursor, 6);
      for (const id of ids) {
        const own = events.filter((e) => e.data.id === id);
        expect(own.map((e) => e.type)).toEqual(['deal.updated', 'deal.stage_changed', 'deal.won']);
        expect(own[0]?.changes?.stage_id).toEqual({ from: pilot.id, to: signed.id });
        expect(own[1]?.stage).toEqual({
          from: { id: pilot.id, name: 'Pilot', stage_type: 'open' },
          to: { id: signed.id, name: 'Signed', stage_type: 'won' },
        });
        expect(own[1]?.data).toMatchObject({ stage_id: signed.id, lifecycle_stage: 'customer' });
      }
      expect((await s.api(`/deals?pipeline_id=${p.id}`)).body.meta.total).toBe(2);
      await expectKeptCountsExact(s.orgA);

      // An empty stage goes without move_to; the last one stays.
      expect((await del(`/pipelines/${p.id}/stages/${intro.id}`)).body).toEqual({
        success: true,
        moved_deals: 0,
      });
      const dropped = after.stages[2] as Stage;
      expect((await del(`/pipelines/${p.id}/stages/${dropped.id}`)).status).toBe(200);
      const last = await del(`/pipelines/${p.id}/stages/${signed.id}?move_to=${signed.id}`);
      expect(last.status).toBe(400);
      const only = await patch(`/pipelines/${p.id}/stages/${signed.id}`, { position: 1 });
      expect(only.body.data).toMatchObject({ position: 1 });
      const lastStage = await s.api(`/pipelines/${other.id}/stages/${other.stages[0]?.id}`, {
        method: 'DELETE',
      });
      expect(lastStage.status).toBe(200);
      for (const stage of other.stages.slice(1, 3)) await del(`/pipelines/${other.id}/stages/${stage.id}`);
      const keepOne = await del(`/pipelines/${other.id}/stages/${other.stages[3]?.id}`);
      expect(keepOne.status).toBe(409);
      expect(keepOne.body.error).toMatch(/^A pipeline keeps at least one stage/);
      await expectKeptCountsExact(s.orgA);
    });

    it('deletes a stage while deals are created in it and moved out of it: no deal left behind, no 5xx, counts exact', async () => {
      const org = await s.newOrg('Concurrent stage delete');
      const p = await newPipeline(org, 'Busy');
      const [intro, pilot, signed] = p.stages as [Stage, Stage, Stage, Stage];
      const ids: string[] = [];
      for (let i = 0; i < 8; i++)
        ids.push(
          (await post('/deals', { title: `Busy ${i}`, pipeline_id: p.id, value: i }, org.apiKey)).body.data
            .id,
        );
      const answers = await Promise.all([
        del(`/pipelines/${p.id}/stages/${intro.id}?move_to=${pilot.id}`, org.apiKey),
        ...Array.from({ length: 6 }, (_, i) =>
          post('/deals', { title: `Late ${i}`, pipeline_id: p.id, stage_id: intro.id }, org.apiKey),
        ),
        ...ids.slice(0, 4).map((id) => patch(`/deals/${id}`, { stage_id: signed.id }, org.apiKey)),
      ]);
      const [deleted, ...others] = answers;
      expect(deleted?.status, deleted?.text).toBe(200);
      for (const res of others) {
        expect([200, 201, 400, 409], res.text).toContain(res.status);
        if (res.status >= 400) expect(res.body.error).toMatch(/^stage_id: /);
      }
      const [left] = await s.sql<{ n: unknown }>('select count(*) as n from deals where stage_id = ?', [
        intro.id,
      ]);
      expect(Number(left?.n)).toBe(0);
      const after = (await s.api(`/pipelines/${p.id}`, { key: org.apiKey })).body.data as Pipeline;
      expect(after.stages.map((x) => x.position)).toEqual([1, 2, 3]);
      const created = others.filter((r) => r.status === 201).length;
      expect(after.stages.reduce((n, x) => n + x.deal_count, 0)).toBe(8 + created);
      await expectKeptCountsExact(org);
    });

    it('protects the default pipeline, switches the default, and deletes only an empty pipeline', async () => {
      const pipelines = (await s.api('/pipelines')).body.data as Pipeline[];
      const original = pipelines.find((p) => p.is_default) as Pipeline;
      const refused = await del(`/pipelines/${original.id}`);
      expect(refused.status).toBe(409);
      expect(refused.body).toEqual({
        error: expect.stringMatching(/^The default pipeline cannot be deleted/),
        code: 'conflict',
      });
      const unset = await patch(`/pipelines/${original.id}`, { is_default: false });
      expect(unset.status).toBe(409);
      expect(unset.body.error).toMatch(/^is_default: /);

      const next = await newPipeline(s.orgA, 'New default', { is_default: true });
      expect(next.is_default).toBe(true);
      const stages = (await s.api('/pipeline/stages')).body.data as Stage[];
      expect(stages.map((x) => x.name)).toEqual(['Intro', 'Pilot', 'Signed', 'Dropped']);
      const deal = await post('/deals', { title: 'Lands in the new default' });
      expect(deal.body.data).toMatchObject({ pipeline_id: next.id, stage_name: 'Intro' });
      const listed = (await s.api('/pipelines')).body.data as Pipeline[];
      expect(listed.filter((p) => p.is_default).map((p) => p.id)).toEqual([next.id]);

      const back = await patch(`/pipelines/${original.id}`, { is_default: true, name: 'Sales' });
      expect(back.status, back.text).toBe(200);
      expect(back.body.data).toMatchObject({ name: 'Sales', is_default: true });
      expect(((await s.api('/pipeline/stages')).body.data as Stage[])[0]?.name).toBe('Lead');

      // A pipeline deals are in stays until they are gone.
      const busy = await del(`/pipelines/${next.id}`);
      expect(busy.status).toBe(409);
      expect(busy.body.error).toMatch(/^1 deal is in pipeline "New default"/);
      expect((await del(`/deals/${deal.body.data.id}`)).status).toBe(200);
      const gone = await del(`/pipelines/${next.id}`);
      expect(gone.status, gone.text).toBe(200);
      expect(gone.body).toEqual({ success: true });
      expect((await s.api(`/pipelines/${next.id}`)).status).toBe(404);
      await expectKeptCountsExact(s.orgA);
    });

    it('reports health for one pipeline with pipeline_id, and for the whole organization without', async () => {
      const org = await s.newOrg('Health per pipeline');
      const p = await newPipeline(org, 'Second line');
      const now = Date.now();
      await post(
        '/deals',
        { title: 'Default, healthy', expected_close_date: new Date(now + 30 * DAY).toISOString() },
        org.apiKey,
      );
      await post(
        '/deals',
        { title: 'Default, overdue', expected_close_date: new Date(now - 2 * DAY).toISOString() },
        org.apiKey,
      );
      await post(
        '/deals',
        {
          title: 'Second, healthy',
          pipeline_id: p.id,
          expected_close_date: new Date(now + 30 * DAY).toISOString(),
        },
        org.apiKey,
      );
      await post(
        '/deals',
        { title: 'Second, won', pipeline_id: p.id, stage_id: p.stages[2]?.id },
        org.apiKey,
      );

      const all = await s.api('/pipeline/health', { key: org.apiKey });
      expect(all.body.data).toMatchObject({ total_deals: 3, healthy_deals: 2, critical_actions: 1 });
      const second = await s.api(`/pipeline/health?pipeline_id=${p.id}`, { key: org.apiKey });
      expect(second.status).toBe(200);
      expect(second.body.data).toMatchObject({
        total_deals: 1,
        healthy_deals: 1,
        critical_actions: 0,
        healthy_percentage: 100,
      });
      const byDefault = (await s.api('/pipelines', { key: org.apiKey })).body.data[0] as Pipeline;
      const first = await s.api(`/pipeline/health?pipeline_id=${byDefault.id}`, { key: org.apiKey });
      expect(first.body.data).toMatchObject({ total_deals: 2, healthy_deals: 1, critical_actions: 1 });

      expect((await s.api(`/pipeline/health?pipeline_id=${MISSING_ID}`, { key: org.apiKey })).body).toEqual({
        error: 'Pipeline not found',
        code: 'not_found',
      });
      // Another organization's pipeline is as unknown as a missing one.
      expect((await s.api(`/pipeline/health?pipeline_id=${p.id}`)).status).toBe(404);
      const bad = await s.api('/pipeline/health?pipeline_id=x', { key: org.apiKey });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatch(/^pipeline_id: /);
      // tRPC: without input as before, and with one.
      const trpc = s.trpc(org);
      expect((await trpc.pipeline.health.query()).data.total_deals).toBe(3);
      expect((await trpc.pipeline.health.query({ pipeline_id: p.id })).data.total_deals).toBe(1);
    });

    it('needs pipeline:write to change pipelines, pipeline:read to read them', async () => {
      const fork = () => s.running.db.orm.em.fork();
      const { api_key: reader } = await issueApiKey(fork(), s.orgA.orgId, { scopes: ['pipeline:read'] });
      const { api_key: writer } = await issueApiKey(fork(), s.orgA.orgId, { scopes: ['pipeline:write'] });
      expect((await s.api('/pipelines', { key: reader })).status).toBe(200);
      const refused = await post('/pipelines', { name: 'Nope', stages: [{ name: 'One' }] }, reader);
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({
        error: expect.stringContaining('lacks the scope pipeline:write'),
        code: 'insufficient_scope',
      });
      const made = await post('/pipelines', { name: 'By the writer', stages: [{ name: 'One' }] }, writer);
      expect(made.status).toBe(201);
      expect((await s.api(`/pipelines/${made.body.data.id}`, { key: writer })).status).toBe(403);
      expect((await del(`/pipelines/${made.body.data.id}`, reader)).status).toBe(403);
      expect((await del(`/pipelines/${made.body.data.id}`, writer)).status).toBe(200);
    });

    it('answers 404 for another organization’s pipelines and stages and changes nothing of theirs', async () => {
      const theirs = await newPipeline(s.orgB, 'B only');
      const stage = theirs.stages[0] as Stage;
      const mine = ((await s.api('/pipelines')).body.data as Pipeline[])[0] as Pipeline;
      const calls = [
        s.api(`/pipelines/${theirs.id}`),
        patch(`/pipelines/${theirs.id}`, { name: 'Taken' }),
        del(`/pipelines/${theirs.id}`),
        post(`/pipelines/${theirs.id}/stages`, { name: 'Injected' }),
        patch(`/pipelines/${theirs.id}/stages/${stage.id}`, { name: 'Taken' }),
        del(`/pipelines/${theirs.id}/stages/${stage.id}`),
        // Their stage under my pipeline.
        patch(`/pipelines/${mine.id}/stages/${stage.id}`, { name: 'Taken' }),
        del(`/pipelines/${mine.id}/stages/${stage.id}`),
      ];
      for (const res of await Promise.all(calls)) {
        expect(res.status, res.text).toBe(404);
        expect(res.body.code).toBe('not_found');
      }
      expect((await s.api(`/pipelines/${theirs.id}`, { key: s.orgB.apiKey })).body.data).toEqual(theirs);
      expect(((await s.api('/pipelines')).body.data as Pipeline[]).map((p) => p.id)).not.toContain(theirs.id);
      // Nor can a deal of mine go into their pipeline.
      const deal = await post('/deals', { title: 'Trespass', pipeline_id: theirs.id });
      expect(deal.status).toBe(400);
      expect(deal.body.error).toBe('pipeline_id: no such pipeline');
    });

    it('refuses bad input with 400 naming the field, and writes nothing', async () => {
      const count = async () => ((await s.api('/pipelines')).body.data as Pipeline[]).length;
      const before = await count();
      const cases: Array<[unknown, RegExp]> = [
        [{ name: 'No stages' }, /^stages: Required/],
        [{ name: 'Empty', stages: [] }, /^stages: /],
        [{ name: '', stages: [{ name: 'x' }] }, /^name: must not be empty/],
        [
          { name: 'Bad colour', stages: [{ name: 'x', color: 'red' }] },
          /^stages\[0\]\.color: must be a color as #rrggbb/,
        ],
        [
          { name: 'Bad type', stages: [{ name: 'x' }, { name: 'y', stage_type: 'maybe' }] },
          /^stages\[1\]\.stage_type: /,
        ],
        [{ name: 'Bad odds', stages: [{ name: 'x', probability: 101 }] }, /^stages\[0\]\.probability: /],
        [{ name: 'Rotten', stages: [{ name: 'x', rotten_days: 0 }] }, /^stages\[0\]\.rotten_days: /],
        [
          { name: 'Closed', stages: [{ name: 'x', is_closed: true }] },
          /^Unknown property in stages\[0\]: is_closed/,
        ],
      ];
      for (const [json, message] of cases) {
        const res = await post('/pipelines', json);
        expect(res.status, JSON.stringify(json)).toBe(400);
        expect(res.body.code).toBe('invalid_request');
        expect(res.body.error).toMatch(message);
      }
      const p = (await s.api('/pipelines')).body.data[0] as Pipeline;
      const badPatch = await patch(`/pipelines/${p.id}/stages/${p.stages[0]?.id}`, { probability: -1 });
      expect(badPatch.status).toBe(400);
      expect(badPatch.body.error).toMatch(/^probability: /);
      const unknown = await patch(`/pipelines/${p.id}`, { colour: 'blue' });
      expect(unknown.status).toBe(400);
      expect(unknown.body.error).toBe('Unknown property: colour');
      const notUuid = await s.api('/pipelines/not-a-uuid');
      expect(notUuid.status).toBe(400);
      expect(notUuid.body.error).toMatch(/^id: /);
      expect(await count()).toBe(before);
    });
  },
);
