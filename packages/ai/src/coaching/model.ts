/** A trait of closed deals, counted among the won and among the lost ones. */
export interface TraitCount {
  key: TraitKey;
  won_with: number;
  lost_with: number;
}

export const TRAITS = {
  economic_buyer_engaged: {
    good: true,
    label: 'an engaged economic buyer',
    advice: 'reach the economic buyer early',
  },
  champion_engaged: { good: true, label: 'an engaged champion', advice: 'develop a champion in every deal' },
  multi_threaded: {
    good: true,
    label: 'three or more stakeholders',
    advice: 'multi-thread: involve more people',
  },
  positive_stakeholder: {
    good: true,
    label: 'a positive stakeholder',
    advice: 'build relationships that turn positive',
  },
  close_date_set: {
    good: true,
    label: 'an expected close date',
    advice: 'agree a close date with the customer',
  },
  competitor_mentioned: {
    good: false,
    label: 'a competitor mentioned',
    advice: 'surface the competition early and plan to win against it',
  },
  negative_stakeholder: {
    good: false,
    label: 'a negative or blocking stakeholder',
    advice: 'address negative stakeholders before they block',
  },
} as const;
export type TraitKey = keyof typeof TRAITS;

import { type OverdueTasks, taskNamed } from '../briefing/model.ts';

/** Open deals that need attention now, as the graph shows them (see briefing.service.ts). */
export interface CoachingAttention {
  /** Single-threaded deals among the ones the briefing lists: the deal and its one engaged contact. */
  singleThreaded: Array<{ id: string; title: string; with: string }>;
  overdueTasks: OverdueTasks;
  /** Listed deals whose close date was pushed PUSHES_RISK times or more (field history), with the count. */
  slipping?: Array<{ id: string; title: string; pushes: number }>;
}

export interface CoachingFacts {
  now: Date;
  periodDays: number;
  won: number;
  lost: number;
  avgCycleDaysWon: number | null;
  avgCycleDaysLost: number | null;
  avgActivitiesWon: number | null;
  avgActivitiesLost: number | null;
  traits: TraitCount[];
  /** Closed deals by lead source in the period. */
  sources: Array<{ source: string; won: number; lost: number }>;
  attention?: CoachingAttention;
}

/** How many single-threaded deals a tip names (the count says how many there are). */
const NAMED_DEALS = 5;

/** Tips about open deals now: multi-thread the single-threaded ones, clear the overdue tasks. */
function attentionTips(a: CoachingAttention | undefined): string[] {
  if (!a) return [];
  const tips: string[] = [];
  const n = a.singleThreaded.length;
  if (n > 0)
    tips.push(
      `Multi-thread ${n} open deal${n === 1 ? '' : 's'} with 1 engaged contact${n === 1 ? '' : ' each'}: ` +
        `${a.singleThreaded
          .slice(0, NAMED_DEALS)
          .map((d) => `${d.title} (only ${d.with})`)
          .join(', ')}${n > NAMED_DEALS ? ` and ${n - NAMED_DEALS} more` : ''}.`,
    );
  const o = a.overdueTasks;
  if (o.count > 0)
    tips.push(
      `Clear the overdue tasks: ${o.more ? 'more than ' : ''}${o.count.toLocaleString('en-US')} open ${o.count === 1 && !o.more ? 'task is' : 'tasks are'} past due` +
        (o.oldest.length > 0 ? `, the oldest ${o.oldest.map(taskNamed).join('; ')}.` : '.'),
    );
  const slipping = a.slipping ?? [];
  if (slipping.length > 0)
    tips.push(
      `Confirm the close date with the economic buyer on ${slipping.length} open deal${slipping.length === 1 ? '' : 's'} whose date keeps moving: ` +
        `${slipping
          .slice(0, NAMED_DEALS)
          .map((d) => `${d.title} (pushed ${d.pushes} times)`)
          .join(', ')}${slipping.length > NAMED_DEALS ? ` and ${slipping.length - NAMED_DEALS} more` : ''}.`,
    );
  return tips;
}

/** A difference in share must be at least this large, with this many deals per side, to make a tip. */
export const MIN_SHARE_GAP = 15;
export const MIN_DEALS_PER_OUTCOME = 3;

const pct = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((part / whole) * 100));

export interface BuiltInCoaching {
  period: string;
  win_rate: string;
  deals_won: number;
  deals_lost: number;
  avg_cycle_days: number | null;
  coaching_tips: string[];
}

/**
 * Tips from the period's win/loss patterns: what won deals had that lost ones lacked (and the reverse for
 * warning signs), the cycle and cadence of each, and the best lead source, each with its numbers.
 * Largest differences first.
 */
export function buildCoaching(f: CoachingFacts): BuiltInCoaching {
  const closed = f.won + f.lost;
  const from = new Date(f.now.getTime() - f.periodDays * 86_400_000).toISOString().slice(0, 10);
  const tips: Array<{ weight: number; text: string }> = [];
  const enough = f.won >= MIN_DEALS_PER_OUTCOME && f.lost >= MIN_DEALS_PER_OUTCOME;
  if (enough) {
    for (const t of f.traits) {
      const trait = TRAITS[t.key];
      const inWon = pct(t.won_with, f.won);
      const inLost = pct(t.lost_with, f.lost);
      const gap = trait.good ? inWon - inLost : inLost - inWon;
      if (gap < MIN_SHARE_GAP) continue;
      const advice = `${trait.advice[0]?.toUpperCase()}${trait.advice.slice(1)}`;
      tips.push({
        weight: gap,
        text: trait.good
          ? `${advice}: ${t.won_with} of ${f.won} won deals (${inWon}%) had ${trait.label}, against ${t.lost_with} of ${f.lost} lost deals (${inLost}%).`
          : `${advice}: ${t.lost_with} of ${f.lost} lost deals (${inLost}%) had ${trait.label}, against ${t.won_with} of ${f.won} won deals (${inWon}%).`,
      });
    }
    if (f.avgActivitiesWon !== null && f.avgActivitiesLost !== null) {
      const w = Math.round(f.avgActivitiesWon);
      const l = Math.round(f.avgActivitiesLost);
      if (w >= l + 2 && w >= 1.3 * l)
        tips.push({
          weight: 20,
          text: `Keep a steady cadence: won deals averaged ${w} recorded activities, lost deals ${l}.`,
        });
    }
    if (f.avgCycleDaysWon !== null && f.avgCycleDaysLost !== null) {
      const w = Math.round(f.avgCycleDaysWon);
      const l = Math.round(f.avgCycleDaysLost);
      if (l >= w + 7 && l >= 1.3 * w)
        tips.push({
          weight: 18,
          text: `Qualify out slow deals: won deals closed in ${w} days on average, lost deals took ${l}; a deal open well past ${w} days needs a hard look.`,
        });
    }
    const rate = pct(f.won, closed);
    const best = f.sources
      .filter((s) => s.won + s.lost >= 2 * MIN_DEALS_PER_OUTCOME)
      .map((s) => ({ ...s, rate: pct(s.won, s.won + s.lost) }))
      .sort((a, b) => b.rate - a.rate || a.source.localeCompare(b.source))[0];
    if (best && best.rate >= rate + MIN_SHARE_GAP)
      tips.push({
        weight: best.rate - rate,
        text: `Invest in ${best.source} leads: they won ${best.won} of ${best.won + best.lost} (${best.rate}%), against ${rate}% overall.`,
      });
  }
  tips.sort((a, b) => b.weight - a.weight || a.text.localeCompare(b.text));
  const texts = [...tips.map((t) => t.text), ...attentionTips(f.attention)];
  if (!enough)
    texts.push(
      `Only ${f.won} won and ${f.lost} lost deals closed in the last ${f.periodDays} days; patterns need at least ${MIN_DEALS_PER_OUTCOME} of each.`,
    );
  else if (tips.length === 0)
    texts.push(
      `Won and lost deals of the last ${f.periodDays} days (${f.won} won, ${f.lost} lost) differ by less than ${MIN_SHARE_GAP} points on every tracked trait: no clear pattern yet.`,
    );
  const cycles = [
    ...(f.avgCycleDaysWon !== null ? [{ avg: f.avgCycleDaysWon, n: f.won }] : []),
    ...(f.avgCycleDaysLost !== null ? [{ avg: f.avgCycleDaysLost, n: f.lost }] : []),
  ];
  const cycleDeals = cycles.reduce((a, c) => a + c.n, 0);
  return {
    period: `last ${f.periodDays} days (${from} to ${f.now.toISOString().slice(0, 10)})`,
    win_rate: closed === 0 ? 'n/a' : `${pct(f.won, closed)}%`,
    deals_won: f.won,
    deals_lost: f.lost,
    avg_cycle_days:
      cycleDeals === 0 ? null : Math.round(cycles.reduce((a, c) => a + c.avg * c.n, 0) / cycleDeals),
    coaching_tips: texts,
  };
}
