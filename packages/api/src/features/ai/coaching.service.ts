import { type CoachingFacts, type CoachingResult, signalRegexSql, type TraitKey } from '@crm/ai';
import type { AuthedContext } from '../../context.ts';
import { currentOrg, orgRows } from '../../read-model.ts';
import { ACTIVE_AT, stagesOfType } from '../pipeline/open-pipeline.sql.ts';
import { aiRuntime } from './runtime.ts';

/** Coaching looks at the deals closed in this many past days. */
export const COACHING_PERIOD_DAYS = 90;

const TRAIT_SQL: Record<TraitKey, string> = {
  economic_buyer_engaged: 'coalesce(p.eb, false)',
  champion_engaged: 'coalesce(p.champion, false)',
  multi_threaded: 'coalesce(p.people, 0) >= 3',
  positive_stakeholder: 'coalesce(p.positive, false)',
  close_date_set: 'r.expected_close_date is not null',
  competitor_mentioned: 'coalesce(p.competitor, false) or coalesce(r.notes ~* ?, false)',
  negative_stakeholder: 'coalesce(p.negative, false)',
};

/**
 * GET /coaching: the deals closed (moved to a won or lost stage) in the last 90 days, compared in one
 * statement: each trait counted among won and among lost deals, cycle length (creation to close) and
 * activity volume per outcome, and outcomes per lead source. Traits read the deals and contacts as they
 * are now (competition: the deal's or a contact's notes mention it); matching every past notes change
 * of thousands of deals against the lexicon cost more than the whole 300 ms budget.
 */
export async function coaching(ctx: AuthedContext): Promise<CoachingResult> {
  const em = ctx.em;
  const traits = Object.entries(TRAIT_SQL) as Array<[TraitKey, string]>;
  const competitor = signalRegexSql('competitor');
  const rows = await orgRows<Record<string, unknown>>(
    em,
    `with stages as (${stagesOfType('won', 'lost')}),
     recent as (
       select d.id, s.stage_type, d.created_at, d.expected_close_date, d.lead_source, d.notes, c.closed_at
         from stages s
         join deals d on d.org_id = ? and d.stage_id = s.id
         cross join lateral (
           select coalesce(max(a.created_at), d.created_at) as closed_at
             from activities a where a.deal_id = d.id and a.type = 'stage_changed'
         ) c
        -- A close records a stage_changed activity, which moves the deal's last activity (or the deal was
        -- created closed): the range of deals_org_stage_active bounds the read before the lookup.
        where ${ACTIVE_AT} > now() - make_interval(days => ${COACHING_PERIOD_DAYS})
          and c.closed_at > now() - make_interval(days => ${COACHING_PERIOD_DAYS})
     ), people as (
       select c.deal_id,
              bool_or(c.role_type = 'economic_buyer' and c.engagement_level in ('high', 'medium')) as eb,
              bool_or(c.role_type = 'champion' and c.engagement_level in ('high', 'medium')) as champion,
              count(*) as people,
              bool_or(c.sentiment = 'positive') as positive,
              bool_or(c.sentiment = 'negative' or c.role_type = 'blocker') as negative,
              bool_or(c.notes ~* ?) as competitor
         from contacts c where c.org_id = ? and c.deal_id in (select id from recent)
        group by c.deal_id
     ), acts as (
       select a.deal_id, count(*) filter (where a.type <> 'deal_analyzed') as n
         from activities a where a.org_id = ? and a.deal_id in (select id from recent)
        group by a.deal_id
     )
     select r.stage_type, coalesce(r.lead_source, '') as lead_source, count(*) as deals,
            sum(extract(epoch from r.closed_at - r.created_at) / 86400) as cycle_days,
            sum(coalesce(x.n, 0)) as activities,
            ${traits.map(([key, expr]) => `count(*) filter (where ${expr}) as ${key}`).join(',\n            ')}
       from recent r left join people p on p.deal_id = r.id left join acts x on x.deal_id = r.id
      group by r.stage_type, coalesce(r.lead_source, '')`,
    [currentOrg(em), competitor, currentOrg(em), currentOrg(em), competitor],
  );
  const won = rows.filter((r) => r.stage_type === 'won');
  const lost = rows.filter((r) => r.stage_type === 'lost');
  const sum = (group: Record<string, unknown>[], key: string) =>
    group.reduce((a, r) => a + Number(r[key] ?? 0), 0);
  const wonDeals = sum(won, 'deals');
  const lostDeals = sum(lost, 'deals');
  const avg = (group: Record<string, unknown>[], key: string, n: number) =>
    n === 0 ? null : sum(group, key) / n;
  const sources = new Map<string, { source: string; won: number; lost: number }>();
  for (const r of rows) {
    const source = String(r.lead_source);
    if (!source) continue;
    const entry = sources.get(source) ?? { source, won: 0, lost: 0 };
    if (r.stage_type === 'won') entry.won += Number(r.deals);
    else entry.lost += Number(r.deals);
    sources.set(source, entry);
  }
  const facts: CoachingFacts = {
    now: new Date(),
    periodDays: COACHING_PERIOD_DAYS,
    won: wonDeals,
    lost: lostDeals,
    avgCycleDaysWon: avg(won, 'cycle_days', wonDeals),
    avgCycleDaysLost: avg(lost, 'cycle_days', lostDeals),
    avgActivitiesWon: avg(won, 'activities', wonDeals),
    avgActivitiesLost: avg(lost, 'activities', lostDeals),
    traits: traits.map(([key]) => ({ key, won_with: sum(won, key), lost_with: sum(lost, key) })),
    sources: [...sources.values()],
  };
  const { result } = await aiRuntime(ctx.services).coaching.invoke(facts);
  return result;
}
