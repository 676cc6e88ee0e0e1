import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { aiFixtures } from './ai-fixtures.ts';
import { DRIVERS, MISSING_ID, startTestServer, type TestServer, UUID } from './harness.ts';
import { type Receiver, startReceiver } from './webhook-receiver.ts';

const PILLARS = [
  'metrics',
  'economic_buyer',
  'decision_criteria',
  'decision_process',
  'paper_process',
  'identified_pain',
  'champion',
  'competition',
];
const LEVELS = ['high', 'medium', 'low'];
const strings = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field
type Body = any;

/** Contract 2.9, field by field. */
function expectAnalysis(data: Body, deal: { id: string; title: string }) {
  expect(Object.keys(data).sort()).toEqual(
    [
      'breakdown',
      'deal',
      'pillar_analyses',
      'recommended_actions',
      'risk_factors',
      'score_band',
      'stage_readiness',
      'summary',
      'total_score',
      'win_factors',
      'win_probability',
    ].sort(),
  );
  expect(data.deal).toEqual({ id: deal.id, title: deal.title, company_name: 'Initrode' });
  expect(Number.isInteger(data.win_probability)).toBe(true);
  expect(data.win_probability).toBeGreaterThanOrEqual(0);
  expect(data.win_probability).toBeLessThanOrEqual(100);
  expect(typeof data.total_score).toBe('number');
  expect(data.total_score).toBeGreaterThanOrEqual(0);
  expect(data.total_score).toBeLessThanOrEqual(100);
  expect(['strong', 'on_track', 'needs_attention', 'at_risk']).toContain(data.score_band);
  expect(typeof data.breakdown).toBe('object');
  expect(['healthy', 'at_risk', 'critical']).toContain(data.breakdown.deal_health);
  expect(typeof data.summary).toBe('string');
  for (const list of ['recommended_actions', 'risk_factors', 'win_factors'])
    expect(strings(data[list])).toBe(true);
  expect(data.pillar_analyses.map((p: Body) => p.pillar)).toEqual(PILLARS);
  for (const p of data.pillar_analyses) {
    expect(p.score).toBeGreaterThanOrEqual(0);
    expect(p.score).toBeLessThanOrEqual(10);
    expect(strings(p.evidence)).toBe(true);
  }
  expect(data.stage_readiness).toMatchObject({ current_stage: 'Lead', next_stage: 'Qualified' });
  expect(strings(data.stage_readiness.met) && strings(data.stage_readiness.missing)).toBe(true);
}

/** Contract 2.10, field by field. */
function expectPrediction(data: Body, deal: { id: string; title: string }) {
  expect(Object.keys(data).sort()).toEqual(
    [
      'confidence',
      'deal',
      'positive_indicators',
      'recommendations',
      'risk_factors',
      'win_probability',
    ].sort(),
  );
  expect(data.deal).toMatchObject({ id: deal.id, title: deal.title });
  for (const n of [data.win_probability, data.confidence]) {
    expect(Number.isInteger(n)).toBe(true);
    expect(n).toBeGreaterThanOrEqual(0);
    expect(n).toBeLessThanOrEqual(100);
  }
  for (const f of [...data.risk_factors, ...data.positive_indicators]) {
    expect(Object.keys(f).sort()).toEqual(['description', 'factor', 'impact']);
    expect(LEVELS).toContain(f.impact);
    expect(f.description.length).toBeGreaterThan(0);
  }
  expect(data.recommendations.length).toBeGreaterThan(0);
  for (const r of data.recommendations) {
    expect(Object.keys(r).sort()).toEqual(['action', 'priority', 'reason']);
    expect(LEVELS).toContain(r.priority);
  }
}

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`AI insights on ${label}`, () => {
    let s: TestServer;
    let fx: ReturnType<typeof aiFixtures>;
    let receiver: Receiver;
    beforeAll(async () => {
      receiver = await startReceiver();
      // The receiver listens on loopback.
      s = await startTestServer(driver, {
        CRM_WEBHOOKS_ALLOW_PRIVATE: 'true',
        CRM_WEBHOOKS_POLL_INTERVAL_MS: '50',
      });
      fx = aiFixtures(s, s.orgA);
    });
    afterAll(async () => {
      await s?.stop();
      await receiver?.close();
    });

    describe('POST /deals/{id}/analyze', () => {
      it('answers the contract’s analysis with eight MEDDPICC pillars and their evidence', async () => {
        const deal = await fx.deal('Shape check', true);
        const res = await s.api(`/deals/${deal.id}/analyze`, { method: 'POST' });
        expect(res.status, res.text).toBe(200);
        expectAnalysis(res.body.data, { id: deal.id, title: 'Shape check' });
        const eb = res.body.data.pillar_analyses.find((p: Body) => p.pillar === 'economic_buyer');
        expect(eb.evidence.join(' ')).toContain('Erin Buyer (CFO)');
      });

      it('scores an engaged champion and economic buyer with recent activity above the same deal without them', async () => {
        const strong = await fx.deal('Same deal', true);
        const weak = await fx.deal('Same deal', false);
        await fx.age(weak.id, 40);
        const a = await s.api(`/deals/${strong.id}/analyze`, { method: 'POST' });
        const b = await s.api(`/deals/${weak.id}/analyze`, { method: 'POST' });
        expect(a.body.data.total_score).toBeGreaterThan(b.body.data.total_score);
        expect(a.body.data.win_probability).toBeGreaterThan(b.body.data.win_probability);
        expect(b.body.data.risk_factors.join(' ')).toMatch(/No activity for 40 days/);
        expect(b.body.data.breakdown.deal_health).toBe('critical');
        const pa = await s.api(`/deals/${strong.id}/predict`, { method: 'POST' });
        const pb = await s.api(`/deals/${weak.id}/predict`, { method: 'POST' });
        expect(pa.body.data.win_probability).toBeGreaterThan(pb.body.data.win_probability);
      });

      it('gives the same answer for the same data', async () => {
        const deal = await fx.deal('Deterministic', true);
        const first = await s.api(`/deals/${deal.id}/analyze`, { method: 'POST' });
        const second = await s.api(`/deals/${deal.id}/analyze`, { method: 'POST' });
        expect(second.body).toEqual(first.body);
        const p1 = await s.api(`/deals/${deal.id}/predict`, { method: 'POST' });
        const p2 = await s.api(`/deals/${deal.id}/predict`, { method: 'POST' });
        expect(p2.body).toEqual(p1.body);
      });

      it('stores the analysis, sets deal_health and win_probability, records an activity and emits analysis.completed', async () => {
        const deal = await fx.deal('Stored effects', true);
        const before = (await s.api(`/deals/${deal.id}`)).body.data.deal;
        const hook = await s.api('/webhooks', {
          method: 'POST',
          json: { url: receiver.url('/analysis'), events: ['analysis.completed'] },
        });
        receiver.secretFor('/analysis', hook.body.data.secret);
        const res = await s.api(`/deals/${deal.id}/analyze`, { method: 'POST' });
        const analysis = res.body.data;
        const after = (await s.api(`/deals/${deal.id}`)).body.data;
        expect(after.deal.deal_health).toBe(analysis.breakdown.deal_health);
        expect(after.deal.win_probability).toBe(analysis.win_probability);
        // Derived fields changed, so updated_at moved; looking at a deal is not customer activity.
        expect(after.deal.updated_at).not.toBeNull();
        expect(after.deal.last_activity_at).toBe(before.last_activity_at);
        expect(after.recent_activities[0]).toMatchObject({ type: 'deal_analyzed' });
        expect(after.recent_activities[0].description).toContain(`score ${analysis.total_score}/100`);

        const stored = await s.sql<{ result: unknown; deal_health: string; narrative_source: string }>(
          'select result, deal_health, narrative_source from deal_analyses where deal_id = ?',
          [deal.id],
        );
        expect(stored).toHaveLength(1);
        const result =
          typeof stored[0]?.result === 'string' ? JSON.parse(stored[0].result) : stored[0]?.result;
        expect(result).toEqual(analysis);
        expect(stored[0]?.narrative_source).toBe('built_in');

        // analysis.completed arrives at a subscribed endpoint, signed, with the analysis as the API answered it.
        const delivered = await receiver.waitFor('/analysis', (got) =>
          got.some((r) => r.payload?.data?.deal_id === deal.id),
        );
        const event = delivered.find((r) => r.payload?.data?.deal_id === deal.id);
        expect(event?.verifyError).toBeUndefined();
        expect(event?.payload.type).toBe('analysis.completed');
        expect(event?.payload.data).toEqual({ deal_id: deal.id, ...analysis });

        // The same analysis again changes no derived field: updated_at stays.
        await s.api(`/deals/${deal.id}/analyze`, { method: 'POST' });
        const again = (await s.api(`/deals/${deal.id}`)).body.data.deal;
        expect(again.updated_at).toBe(after.deal.updated_at);
      });

      it('answers 404 for a missing deal and 400 for a malformed id, storing nothing', async () => {
        const missing = await s.api(`/deals/${MISSING_ID}/analyze`, { method: 'POST' });
        expect(missing.status).toBe(404);
        expect(missing.body).toEqual({ error: 'Deal not found', code: 'not_found' });
        const bad = await s.api('/deals/not-a-uuid/analyze', { method: 'POST' });
        expect(bad.status).toBe(400);
        expect(bad.body.error).toMatch(/id/);
        expect(await s.sql('select id from deal_analyses where deal_id = ?', [MISSING_ID])).toHaveLength(0);
      });
    });

    describe('the relationship graph and custom fields (issues 29 and 30)', () => {
      it('takes roles from the deal’s links, cites logged activities and ai_hint fields, names overdue tasks', async () => {
        const field = await s.api('/custom-fields/deals', {
          method: 'POST',
          json: { key: 'arr', label: 'ARR', type: 'currency', ai_hint: 'metrics' },
        });
        expect(field.status, field.text).toBe(201);
        const deal = await fx.post('/deals', {
          title: 'Graph deal',
          company_name: 'Initrode',
          value: 10_000,
          expected_close_date: fx.inDays(30),
          custom: { arr: 120_000 },
        });
        const other = await fx.post('/deals', { title: 'Graph deal, other' });
        // Her own deal is another one: she is this deal's economic buyer through a link.
        const buyer = await fx.post('/contacts', {
          name: 'Lin Ledger',
          title: 'CFO',
          deal_id: other.id,
          role_type: 'end_user',
        });
        const put = await s.api(`/deals/${deal.id}/stakeholders/${buyer.id}`, {
          method: 'PUT',
          json: { role_type: 'economic_buyer' },
        });
        expect(put.status, put.text).toBe(200);
        await fx.post('/contacts', { name: 'Cy Champion', deal_id: deal.id, role_type: 'champion' });
        const call = await fx.post('/activities', {
          type: 'call',
          subject: 'Discovery call',
          body: 'Pain: month-end close is manual and slow.',
          participants: [buyer.id],
          links: [{ type: 'deal', id: deal.id }],
        });
        const task = await fx.post('/activities', {
          type: 'task',
          subject: 'Send the order form',
          due_at: fx.inDays(-3),
          links: [{ type: 'deal', id: deal.id }],
        });
        const res = await s.api(`/deals/${deal.id}/analyze`, { method: 'POST' });
        expect(res.status, res.text).toBe(200);
        const data = res.body.data;
        const pillar = (name: string) => data.pillar_analyses.find((p: Body) => p.pillar === name);
        const day = (d: unknown) => String(d).slice(0, 10);
        // Present (4) and engaged by taking part in a logged call (+3), cited by the call's id.
        expect(pillar('economic_buyer').evidence).toEqual([
          `Economic buyer: Lin Ledger (CFO), engagement not recorded, took part in call ${call.id} on ${day(call.occurred_at)}`,
        ]);
        expect(pillar('economic_buyer').score).toBe(7);
        expect(pillar('champion').evidence.join(' ')).toContain('Champion: Cy Champion');
        expect(pillar('identified_pain').evidence.join(' ')).toContain(`(call ${call.id} on `);
        // The deal value (5) and the ai_hint field as the written measurable outcome (5), cited by key.
        expect(pillar('metrics').score).toBe(10);
        expect(pillar('metrics').evidence).toContain('Custom field ARR (custom.arr): 120,000');
        expect(data.risk_factors).toContain(
          'Single-threaded: Lin Ledger is the only engaged one of 2 stakeholders',
        );
        expect(data.risk_factors).toContain(
          `Overdue task: “Send the order form” was due ${day(task.due_at)} (task ${task.id} on ${day(task.occurred_at)})`,
        );
        expect(data.recommended_actions).toContain(
          'Complete or reschedule 1 overdue task, first “Send the order form”',
        );
        expect(data.breakdown).toMatchObject({
          engaged_stakeholders: 1,
          logged_activities: 2,
          overdue_tasks: 1,
        });
        // Done, the task is no risk any more.
        await fx.patch(`/activities/${task.id}`, { status: 'done' });
        const again = (await s.api(`/deals/${deal.id}/analyze`, { method: 'POST' })).body.data;
        expect(again.breakdown.overdue_tasks).toBe(0);
        expect(again.risk_factors.join(' ')).not.toContain('Overdue task');
      });
    });

    describe('the field history (issue 31)', () => {
      it('names a close date pushed three times and a deal stuck in its stage, citing the history', async () => {
        // Worth the most of the organization's at-risk deals, so the briefing lists it first.
        const deal = await fx.post('/deals', {
          title: 'Slipping deal',
          value: 900_000_000,
          expected_close_date: fx.inDays(-40),
        });
        // Pushed, pushed, pulled in, pushed: three pushes, to a date already passed (so at risk).
        for (const days of [-30, -20, -25, -10])
          await fx.patch(`/deals/${deal.id}`, { expected_close_date: fx.inDays(days) });
        // Its stage since 90 days ago (the creation's row moved back): past the 60 days of an
        // organization without a fitted model's typical times.
        await s.sql(
          `update field_history set valid_from = valid_from - interval '90 days' where record_id = ? and field = '*'`,
          [deal.id],
        );
        const history = await s.api(`/deals/${deal.id}/history?field=expected_close_date,stage_id`);
        expect(history.status, history.text).toBe(200);
        const entries = history.body.data as Body[];
        const dates = entries.filter((e) => e.field === 'expected_close_date');
        const stage = entries.find((e) => e.field === 'stage_id') as Body;
        const day = (d: unknown) => String(d).slice(0, 10);
        const cite = (i: number) =>
          `${day(dates[i - 1]?.value)} → ${day(dates[i]?.value)} on ${day(dates[i]?.from)}, event ${dates[i]?.event_id}`;
        const res = await s.api(`/deals/${deal.id}/analyze`, { method: 'POST' });
        expect(res.status, res.text).toBe(200);
        const data = res.body.data;
        expect(data.risk_factors).toContain(
          `Close date pushed 3 times (expected_close_date ${cite(1)}; ${cite(2)}; ${cite(4)})`,
        );
        expect(data.risk_factors).toContain(
          `Stuck in ${deal.stage_name} for 90 days (stage_id since ${day(stage.from)}, event ${stage.event_id}; no typical time known, stuck after 60 days)`,
        );
        expect(data.recommended_actions.join(' ')).toContain('it was pushed 3 times');
        expect(data.breakdown).toMatchObject({ close_date_pushes: 3, days_in_stage: 90 });
        // The briefing lists it with the last push cited; coaching names it.
        const briefing = (await s.api('/briefing')).body.data;
        const listed = briefing.at_risk_deals.find((d: Body) => d.id === deal.id);
        expect(listed?.reason).toContain(`close date pushed 3 times, last ${cite(4)}`);
        const coaching = (await s.api('/coaching')).body.data;
        expect(coaching.coaching_tips.join(' ')).toContain('Slipping deal (pushed 3 times)');
        // One push is no risk: a fresh deal pushed once names none.
        const once = await fx.post('/deals', { title: 'Pushed once', expected_close_date: fx.inDays(30) });
        await fx.patch(`/deals/${once.id}`, { expected_close_date: fx.inDays(40) });
        const calm = (await s.api(`/deals/${once.id}/analyze`, { method: 'POST' })).body.data;
        expect(calm.breakdown.close_date_pushes).toBe(1);
        expect(calm.risk_factors.join(' ')).not.toMatch(/Close date pushed|Stuck in/);
      });
    });

    describe('POST /deals/{id}/predict', () => {
      it('answers the contract’s prediction and stores win_probability on the deal', async () => {
        const deal = await fx.deal('Predict me', true);
        const res = await s.api(`/deals/${deal.id}/predict`, { method: 'POST' });
        expect(res.status, res.text).toBe(200);
        expectPrediction(res.body.data, { id: deal.id, title: 'Predict me' });
        const stored = (await s.api(`/deals/${deal.id}`)).body.data.deal;
        expect(stored.win_probability).toBe(res.body.data.win_probability);
        expect(stored.deal_health).toBeNull();
        expect(res.body.data.positive_indicators.map((f: Body) => f.description).join(' ')).toContain(
          'Erin Buyer',
        );
      });

      it('says 100 for a won deal and 0 for a lost one', async () => {
        const stages = await fx.stages();
        const won = await fx.deal('Won already', true);
        const lost = await fx.deal('Lost already', false);
        await fx.patch(`/deals/${won.id}`, { stage_id: stages.find((x) => x.stage_type === 'won')?.id });
        await fx.patch(`/deals/${lost.id}`, { stage_id: stages.find((x) => x.stage_type === 'lost')?.id });
        const a = await s.api(`/deals/${won.id}/predict`, { method: 'POST' });
        const b = await s.api(`/deals/${lost.id}/predict`, { method: 'POST' });
        expect([a.body.data.win_probability, a.body.data.confidence]).toEqual([100, 100]);
        expect([b.body.data.win_probability, b.body.data.confidence]).toEqual([0, 100]);
        await s.sql('delete from deals where id in (?, ?)', [won.id, lost.id]);
      });

      it('answers 404 for a missing deal over tRPC too', async () => {
        await expect(s.trpc(s.orgA).ai.predict.mutate({ id: MISSING_ID })).rejects.toMatchObject({
          status: 404,
        });
      });
    });

    describe('through the typed clients', () => {
      it('the REST SDK and the tRPC client reach all four AI operations', async () => {
        const deal = await fx.deal('Typed clients', true);
        const rest = s.rest(s.orgA);
        const analyzed = await rest.POST('/deals/{id}/analyze', { params: { path: { id: deal.id } } });
        expect(analyzed.response.status).toBe(200);
        expect(analyzed.data?.data.deal.id).toBe(deal.id);
        const predicted = await rest.POST('/deals/{id}/predict', { params: { path: { id: deal.id } } });
        expect(predicted.data?.data.win_probability).toBe(analyzed.data?.data.win_probability);
        expect((await rest.GET('/briefing')).data?.data.summary?.active_deals).toBeGreaterThan(0);
        expect((await rest.GET('/coaching')).data?.data.period).toMatch(/^last 90 days/);

        const trpc = s.trpc(s.orgA);
        expect((await trpc.ai.analyze.mutate({ id: deal.id })).data).toEqual(analyzed.data?.data);
        expect((await trpc.ai.predict.mutate({ id: deal.id })).data).toEqual(predicted.data?.data);
        expect((await trpc.ai.briefing.query()).data.summary?.active_deals).toBeGreaterThan(0);
        expect((await trpc.ai.coaching.query()).data.win_rate).toBeTypeOf('string');
      });
    });

    describe('with enough closed deals, a model fitted on the organization’s own history', () => {
      const CLOSED_EACH = 18;
      it('is fitted in the background and then predicts from it, with more confidence than the prior', async () => {
        const stages = await fx.stages();
        const wonStage = stages.find((x) => x.stage_type === 'won')?.id;
        const lostStage = stages.find((x) => x.stage_type === 'lost')?.id;
        const probe = await fx.deal('Probe', true);
        const prior = (await s.api(`/deals/${probe.id}/predict`, { method: 'POST' })).body.data;
        expect(prior.positive_indicators.map((f: Body) => f.description).join(' ')).toContain('prior');

        // In this history, deals with an engaged economic buyer and champion were won, the others lost.
        for (let i = 0; i < CLOSED_EACH; i++) {
          const w = await fx.deal(`History won ${i}`, true);
          await fx.patch(`/deals/${w.id}`, { stage_id: wonStage });
          const l = await fx.deal(`History lost ${i}`, false);
          await fx.patch(`/deals/${l.id}`, { stage_id: lostStage });
        }
        const weakProbe = await fx.deal('Weak probe', false);
        let fitted: Body;
        for (let attempt = 0; attempt < 60; attempt++) {
          fitted = (await s.api(`/deals/${probe.id}/predict`, { method: 'POST' })).body.data;
          if (JSON.stringify(fitted).includes('model fitted on')) break;
          await new Promise((r) => setTimeout(r, 250));
        }
        expect(JSON.stringify(fitted)).toContain(`model fitted on ${2 * CLOSED_EACH} closed deals`);
        expect(fitted.confidence).toBeGreaterThan(prior.confidence);
        const weak = (await s.api(`/deals/${weakProbe.id}/predict`, { method: 'POST' })).body.data;
        expect(fitted.win_probability).toBeGreaterThan(weak.win_probability);
        expect(fitted.win_probability).toBeGreaterThan(50);
        expect(weak.win_probability).toBeLessThan(50);
      });

      it('coaching shows the period’s win rate and tips backed by their numbers', async () => {
        const res = await s.api('/coaching');
        expect(res.status, res.text).toBe(200);
        const data = res.body.data;
        expect(Object.keys(data).sort()).toEqual(
          ['avg_cycle_days', 'coaching_tips', 'deals_lost', 'deals_won', 'period', 'win_rate'].sort(),
        );
        expect(data).toMatchObject({
          win_rate: '50%',
          deals_won: CLOSED_EACH,
          deals_lost: CLOSED_EACH,
          avg_cycle_days: 0,
        });
        expect(data.period).toMatch(/^last 90 days \(\d{4}-\d{2}-\d{2} to \d{4}-\d{2}-\d{2}\)$/);
        expect(data.coaching_tips).toContain(
          `Reach the economic buyer early: ${CLOSED_EACH} of ${CLOSED_EACH} won deals (100%) had an engaged economic buyer, against 0 of ${CLOSED_EACH} lost deals (0%).`,
        );
        for (const tip of data.coaching_tips) expect(tip).toMatch(/\d/);
      });
    });

    describe('GET /briefing (organization B, with a pipeline of its own)', () => {
      it('lists what closes this week, what is stale and what is at risk, each with why, and last week’s signals', async () => {
        const b = aiFixtures(s, s.orgB);
        const closing = await b.post('/deals', {
          title: 'Closing soon',
          value: 1000,
          expected_close_date: b.inDays(3),
        });
        const quiet = await b.post('/deals', {
          title: 'Gone quiet',
          value: 2000,
          expected_close_date: b.inDays(40),
        });
        await b.age(quiet.id, 20);
        const overdue = await b.post('/deals', {
          title: 'Overdue',
          value: 3000,
          expected_close_date: b.inDays(-2),
        });
        const sceptic = await b.post('/contacts', {
          name: 'Sam Sceptic',
          deal_id: overdue.id,
          role_type: 'influencer',
        });
        await b.patch(`/contacts/${sceptic.id}`, { sentiment: 'negative' });
        await b.patch(`/deals/${closing.id}`, {
          notes: 'They are excited; competitor Globex is also evaluating.',
        });
        // The graph: one engaged contact on the deal closing soon; an open task past due on the overdue one.
        await b.post('/contacts', { name: 'Olga Only', deal_id: closing.id, role_type: 'champion' });
        const olga = (await s.api(`/deals/${closing.id}`, { key: s.orgB.apiKey })).body.data.stakeholders[0];
        await b.patch(`/contacts/${olga.id}`, { engagement_level: 'high' });
        const task = await b.post('/activities', {
          type: 'task',
          subject: 'Chase the signature',
          due_at: b.inDays(-4),
          links: [{ type: 'deal', id: overdue.id }],
        });
        const dueDay = String(task.due_at).slice(0, 10);

        const res = await s.api('/briefing', { key: s.orgB.apiKey });
        expect(res.status, res.text).toBe(200);
        const data = res.body.data;
        expect(typeof data.greeting).toBe('string');
        expect(data.summary).toEqual({ total_pipeline_value: 6000, active_deals: 3, at_risk_deals: 1 });
        expect(data.closing_this_week.map((d: Body) => d.id)).toEqual([closing.id]);
        expect(data.closing_this_week[0]).toMatchObject({
          title: 'Closing soon',
          value: 1000,
          company: null,
        });
        expect(data.closing_this_week[0].reason).toMatch(/expected to close in 3 day\(s\)/);
        expect(data.stale_deals.map((d: Body) => d.id)).toEqual([quiet.id]);
        expect(data.stale_deals[0].reason).toBe('no activity for 20 days (stale after 14)');
        expect(data.at_risk_deals.map((d: Body) => d.id)).toEqual([overdue.id]);
        expect(data.at_risk_deals[0].reason).toMatch(/expected close date \d{4}-\d{2}-\d{2} has passed/);
        expect(data.at_risk_deals[0].reason).toMatch(/1 negative or blocking stakeholder/);
        for (const item of [...data.closing_this_week, ...data.stale_deals, ...data.at_risk_deals])
          for (const k of ['id', 'title', 'company', 'value', 'reason']) expect(item).toHaveProperty(k);
        expect(data.signals_last_7_days).toEqual({ positive: 1, negative: 1, competitor_mentions: 1 });
        expect(data.greeting).toContain('3 deals active');
        expect(data.closing_this_week[0].reason).toContain(
          'single-threaded: Olga Only is the only engaged contact',
        );
        expect(data.at_risk_deals[0].reason).toContain(
          `1 overdue task, the oldest “Chase the signature” due ${dueDay} (task ${task.id})`,
        );
        expect(data.greeting).toContain('1 of the listed deals single-threaded; 1 overdue task');
        expect(data.greeting).toContain(
          `Oldest overdue: “Chase the signature” on Overdue due ${dueDay} (task ${task.id}).`,
        );
        const coaching = (await s.api('/coaching', { key: s.orgB.apiKey })).body.data;
        expect(coaching.coaching_tips).toContain(
          'Multi-thread 1 open deal with 1 engaged contact: Closing soon (only Olga Only).',
        );
        expect(coaching.coaching_tips).toContain(
          `Clear the overdue tasks: 1 open task is past due, the oldest “Chase the signature” on Overdue due ${dueDay} (task ${task.id}).`,
        );
        expect(data.closing_this_week[0].id).toMatch(UUID);
      });
    });
  });
}
