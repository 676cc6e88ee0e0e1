import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestOrg, type TestServer } from './harness.ts';

/**
 * Pipeline health and the briefing read kept totals and bounded index ranges instead of every open deal
 * (README: Analytics at scale). Here they are compared with the plain full scans they replace, on an
 * organization whose deals are spread over every stage, age, close date, value and stakeholder mood, and
 * again after writes through the API and behind its back.
 */

/** The health figures by counting every open deal: the query GET /pipeline/health ran before. */
const HEALTH_BY_SCAN = `with open_deals as (
    select d.expected_close_date as close_at, coalesce(d.last_activity_at, d.created_at) as active_at
      from deals d join pipeline_stages s on s.id = d.stage_id
     where d.org_id = ? and s.stage_type = 'open'
  ), flagged as (
    select active_at < now() - make_interval(days => ?) as stale,
           (coalesce(close_at < now(), false) or active_at < now() - make_interval(days => ?)) as critical,
           (close_at is null or close_at < now() + make_interval(days => 7)) as closing
      from open_deals
  )
  select count(*) as total,
         count(*) filter (where not stale and not critical) as healthy,
         count(*) filter (where stale) as stale,
         count(*) filter (where critical) as critical,
         count(*) filter (where not critical and (stale or closing)) as pending
    from flagged`;

/** The briefing's deals by scanning every open deal, each list as ids in the briefing's order. */
const BRIEFING_BY_SCAN = `with open_deals as (
    select d.id, d.value, d.expected_close_date, d.deal_health,
           extract(epoch from now() - coalesce(d.last_activity_at, d.created_at)) / 86400 as idle_days,
           exists (select 1 from contacts c where c.deal_id = d.id
                    and (c.sentiment = 'negative' or c.role_type = 'blocker')) as negative
      from deals d join pipeline_stages s on s.id = d.stage_id
     where d.org_id = ? and s.stage_type = 'open'
  ), flagged as (
    select *, (coalesce(expected_close_date < now(), false) or idle_days > ? * 2
               or coalesce(deal_health in ('at_risk', 'critical'), false) or negative) as at_risk
      from open_deals
  )
  select coalesce(sum(value), 0) as total_value, count(*) as active, count(*) filter (where at_risk) as at_risk,
         (select array_agg(id order by expected_close_date, id) from (select * from flagged
           where expected_close_date >= now() and expected_close_date < now() + interval '7 days'
           order by expected_close_date, id limit 10) x) as closing,
         (select array_agg(id order by idle_days desc, id) from (select * from flagged where idle_days > ?
           order by idle_days desc, id limit 10) x) as stale,
         (select array_agg(id order by value desc nulls last, id) from (select * from flagged where at_risk
           order by value desc nulls last, id limit 10) x) as risky
    from flagged`;

const STALE_DAYS = 14; // the configured default (CRM_STALE_THRESHOLD_DAYS)

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`analytics from kept totals and bounded ranges on ${label}`, () => {
    let s: TestServer;
    let org: TestOrg;
    beforeAll(async () => {
      s = await startTestServer(driver);
      org = await s.newOrg('Analytics org');
      // 600 deals spread deterministically over the stages, the last 120 days of activity, close dates
      // from 40 days ago to 40 days ahead (or none), values (or none) and analyses; one in five with a
      // contact, some of them negative or blocking.
      await s.sql(
        `with stages as (select id, pipeline_id, row_number() over (order by position) - 1 as k, count(*) over () as n
                           from pipeline_stages where org_id = ?)
         insert into deals (id, org_id, title, value, currency, lifecycle_stage, lifecycle_stage_manual, pipeline_id,
                            stage_id, deal_health, expected_close_date, last_activity_at, created_at)
         select gen_random_uuid(), ?, 'Deal ' || g, case when g % 11 = 0 then null else (g * 37 % 1000) * 100 end,
                'USD', 'lead', false, st.pipeline_id, st.id,
                case g % 9 when 0 then 'at_risk' when 1 then 'critical' when 2 then 'healthy' else null end,
                case when g % 13 = 0 then null else now() + make_interval(hours => (g * 53 % 1920) - 960) end,
                case when g % 17 = 0 then null else now() - make_interval(hours => g * 29 % 2880) end,
                now() - make_interval(hours => 2880 + g % 500)
           from generate_series(1, 600) g join stages st on st.k = g % st.n`,
        [org.orgId, org.orgId],
      );
      await s.sql(
        `insert into contacts (id, org_id, deal_id, name, role_type, sentiment, created_at)
         select gen_random_uuid(), d.org_id, d.id, 'Person of ' || d.title,
                case when d.title like '%3' then 'blocker' else 'influencer' end,
                case when d.title like '%7' then 'negative' else 'positive' end, now()
           from deals d where d.org_id = ? and (d.title like '%3' or d.title like '%7' or d.title like '%5')`,
        [org.orgId],
      );
    });
    afterAll(async () => {
      await s?.stop();
    });

    async function expectSameAsScan() {
      const health = await s.api('/pipeline/health', { key: org.apiKey });
      expect(health.status, health.text).toBe(200);
      const [row] = await s.sql<Record<string, string | number>>(HEALTH_BY_SCAN, [
        org.orgId,
        STALE_DAYS,
        2 * STALE_DAYS,
      ]);
      const n = (k: string) => Number(row?.[k]);
      expect(health.body.data).toMatchObject({
        total_deals: n('total'),
        healthy_deals: n('healthy'),
        stale_deals: n('stale'),
        pending_actions: n('pending'),
        critical_actions: n('critical'),
        stale_threshold_days: STALE_DAYS,
      });
      const briefing = await s.api('/briefing', { key: org.apiKey });
      expect(briefing.status, briefing.text).toBe(200);
      const [scan] = await s.sql<Record<string, unknown>>(BRIEFING_BY_SCAN, [
        org.orgId,
        STALE_DAYS,
        STALE_DAYS,
      ]);
      const ids = (v: unknown) => (v == null ? [] : (v as string[]));
      const data = briefing.body.data;
      expect(data.summary).toEqual({
        total_pipeline_value: Number(scan?.total_value),
        active_deals: Number(scan?.active),
        at_risk_deals: Number(scan?.at_risk),
      });
      expect(data.closing_this_week.map((d: { id: string }) => d.id)).toEqual(ids(scan?.closing));
      expect(data.stale_deals.map((d: { id: string }) => d.id)).toEqual(ids(scan?.stale));
      expect(data.at_risk_deals.map((d: { id: string }) => d.id)).toEqual(ids(scan?.risky));
      return data;
    }

    it('match a scan of every open deal', async () => {
      const data = await expectSameAsScan();
      // The seed gives every list something to show, so the comparison is not between empty lists.
      expect(data.summary.active_deals).toBeGreaterThan(100);
      expect(data.closing_this_week.length).toBeGreaterThan(0);
      expect(data.stale_deals).toHaveLength(10);
      expect(data.at_risk_deals).toHaveLength(10);
    });

    it('stay the same as the scan after values, stages and deals change, through the API and in SQL', async () => {
      const deals = (await s.api('/deals?limit=60', { key: org.apiKey })).body.data as Array<{ id: string }>;
      const stages = (await s.api('/pipeline/stages', { key: org.apiKey })).body.data as Array<{
        id: string;
      }>;
      for (const [i, deal] of deals.entries()) {
        const change =
          i % 3 === 0
            ? { value: i * 1000 + 0.5 }
            : i % 3 === 1
              ? { stage_id: stages[i % stages.length]?.id }
              : { value: null, expected_close_date: new Date(Date.now() + 86_400_000).toISOString() };
        const res = await s.api(`/deals/${deal.id}`, { method: 'PATCH', key: org.apiKey, json: change });
        expect(res.status, res.text).toBe(200);
      }
      for (const deal of deals.slice(0, 10))
        expect((await s.api(`/deals/${deal.id}`, { method: 'DELETE', key: org.apiKey })).status).toBe(200);
      await s.sql("update deals set value = value * 2 where org_id = ? and title like '%1'", [org.orgId]);
      await expectSameAsScan();
      const mismatched = await s.sql(
        `select k.stage_id from (select stage_id, sum(n) as n, sum(value_sum) as v from deal_counts where org_id = ?
                                  group by stage_id) k
           full join (select stage_id, count(*) as n, coalesce(sum(value), 0) as v from deals where org_id = ?
                       group by stage_id) d on d.stage_id = k.stage_id
          where k.n is distinct from d.n or k.v is distinct from d.v`,
        [org.orgId, org.orgId],
      );
      expect(mismatched).toEqual([]);
    });
  });
}
