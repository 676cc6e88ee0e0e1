import type { ActivityFacts, ContactFacts, DealHistory } from '../src/history.ts';
import { DEFAULT_STAGES } from './pipeline.ts';
import { type Random, seededRandom } from './random.ts';
import type { Change, SyntheticDeal } from './scenario.ts';

const DAY = 86_400_000;

/** A v4-shaped id from the seeded generator, so two runs build the same history. */
const uuidOf = (r: Random) => {
  const hex = Array.from({ length: 32 }, () => Math.floor(r.next() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
};
const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/**
 * The generating process, stated (docs/ai.md, "Quality"):
 *
 * - Deals are created evenly over 540 days. Each has a hidden fit q ~ N(0, 1).
 * - In its first two weeks the deal's stakeholders are added: an economic buyer with probability 0.55,
 *   a champion 0.5, a technical buyer 0.6, 0-2 end users, a blocker 0.15. A person is engaged (high or
 *   medium) with probability sigmoid(q + 0.3), positive with sigmoid(q - 0.3) x 0.8, else negative 10%.
 * - Notes record pain with probability sigmoid(q + 0.2), measurable goals 0.45, evaluation criteria 0.5,
 *   and competition 0.35.
 * - True log-odds of winning: -0.4 + 1.1 engaged economic buyer + 0.9 engaged champion
 *   + 0.35 per positive stakeholder (up to 3) - 0.6 per negative one - 0.9 blocker - 0.7 competition
 *   + 0.5 pain + 0.3 measurable goals + 0.5 q. The outcome is drawn from that.
 * - Cycle: won 25 + Gamma(2, 20) days, lost 15 + Gamma(2, 20). Won deals move Lead, Qualified, Proposal,
 *   Negotiation at 20/45/70% of the cycle; lost deals stop at Qualified (45%), Proposal (40%) or
 *   Negotiation (15%) on the same schedule.
 * - Activity: notes updates about weekly (rate 1.2 x e^(0.3 q)); a deal that will be lost goes quiet
 *   (rate / 8) from a random point at 40-70% of its cycle, and its later notes voice concerns more often.
 *
 * Each deal comes with the probability its outcome was drawn from (for the ECE's noise floor) and that
 * probability under one changed driver (for the one-driver-at-a-time probes of the eval).
 */
export function syntheticDeals(options: { deals: number; now: Date; seed: number }): SyntheticDeal[] {
  const r = seededRandom(options.seed);
  const out: SyntheticDeal[] = [];
  for (let i = 0; i < options.deals; i++) out.push(syntheticDeal(r, options.now, i));
  return out;
}

export const syntheticHistory = (options: { deals: number; now: Date; seed: number }): DealHistory[] =>
  syntheticDeals(options).map((d) => d.history);

const NAMES = ['Ana', 'Ben', 'Chen', 'Dara', 'Eli', 'Fay', 'Gus', 'Hana', 'Ivo', 'Jia', 'Kai', 'Lea'];
const PAIN = [
  'Their manual invoicing is slow and error-prone',
  'Outage last quarter; compliance problem to fix',
  'Struggling with a bottleneck in onboarding',
];
const METRICS = ['Target: save 10 hours per week, ROI within a year', 'KPI: reduce churn by 5%'];
const CRITERIA = [
  'Evaluation criteria agreed: SSO, audit log, integration with ERP',
  'Pilot planned as proof of concept',
];
const COMPETITION = [
  'Competitor Globex is also evaluating',
  'They have an incumbent vendor; shortlist of three',
];
const GOOD = [
  'Great call, they are excited about the rollout',
  'Positive meeting, strong interest',
  'Demo went well',
];
const NEUTRAL = ['Call with the team, follow-up scheduled', 'Sent the deck', 'Weekly sync held'];
const BAD = [
  'Concerns about price',
  'They want to postpone the decision',
  'Budget freeze mentioned, worried',
];

function syntheticDeal(r: Random, now: Date, index: number): SyntheticDeal {
  const windowStart = now.getTime() - 540 * DAY;
  const created = new Date(windowStart + r.next() * 480 * DAY);
  const q = r.normal();
  const contacts: ContactFacts[] = [];
  const activities: ActivityFacts[] = [
    { type: 'deal_created', at: created, description: 'Deal created', contactId: null, changes: null },
  ];
  const person = (role: string) => {
    const engaged = r.chance(sigmoid(q + 0.3));
    const sentiment = r.chance(sigmoid(q - 0.3) * 0.8) ? 'positive' : r.chance(0.1) ? 'negative' : 'neutral';
    const at = new Date(created.getTime() + r.next() * 14 * DAY);
    const c: ContactFacts = {
      id: uuidOf(r),
      name: `${r.pick(NAMES)} ${index}`,
      title: null,
      role,
      influence: r.chance(0.4) ? 'high' : 'medium',
      engagement: engaged ? r.pick(['high', 'medium']) : r.pick(['low', 'unknown']),
      sentiment: role === 'blocker' ? 'negative' : sentiment,
      notes: null,
      createdAt: at,
    };
    contacts.push(c);
    activities.push({
      type: 'contact_added',
      at,
      description: `Contact added as ${role}`,
      contactId: c.id,
      changes: null,
    });
    return c;
  };
  const eb = r.chance(0.55) ? person('economic_buyer') : null;
  const champion = r.chance(0.5) ? person('champion') : null;
  if (r.chance(0.6)) person('technical_buyer');
  for (let k = Math.floor(r.next() * 3); k > 0; k--) person('end_user');
  const blocker = r.chance(0.15) ? person('blocker') : null;
  const pain = r.chance(sigmoid(q + 0.2));
  const metrics = r.chance(0.45);
  const criteria = r.chance(0.5);
  const competition = r.chance(0.35);

  const engaged = (c: ContactFacts | null) =>
    Boolean(c && (c.engagement === 'high' || c.engagement === 'medium'));
  const positives = Math.min(3, contacts.filter((c) => c.sentiment === 'positive').length);
  const negatives = contacts.filter((c) => c.sentiment === 'negative' && c.role !== 'blocker').length;
  const logOdds =
    -0.4 +
    1.1 * Number(engaged(eb)) +
    0.9 * Number(engaged(champion)) +
    0.35 * positives -
    0.6 * negatives -
    0.9 * Number(Boolean(blocker)) -
    0.7 * Number(competition) +
    0.5 * Number(pain) +
    0.3 * Number(metrics) +
    0.5 * q;
  const p = sigmoid(logOdds);
  const won = r.chance(p);
  // The stated process: value has no effect; a competition note -0.7 and a blocker -0.9 (once each).
  const probabilityWith = (change: Change) =>
    change.kind === 'competitor' && !competition
      ? sigmoid(logOdds - 0.7)
      : change.kind === 'negative_blocker' && !blocker
        ? sigmoid(logOdds - 0.9)
        : p;

  const cycleDays = (won ? 25 : 15) + r.gamma(2, 20);
  const closeAt = created.getTime() + cycleDays * DAY;
  const quietFrom = won
    ? Number.POSITIVE_INFINITY
    : created.getTime() + r.between(0.4, 0.7) * cycleDays * DAY;

  // Stage path.
  const stop = r.next();
  const lastStage = won ? 3 : stop < 0.45 ? 1 : stop < 0.85 ? 2 : 3;
  const names = DEFAULT_STAGES.map((s) => s.name);
  const fractions = [0.2, 0.45, 0.7];
  for (let s = 1; s <= lastStage; s++) {
    activities.push({
      type: 'stage_changed',
      at: new Date(created.getTime() + (fractions[s - 1] as number) * cycleDays * DAY),
      description: `Stage changed from ${names[s - 1]} to ${names[s]}`,
      contactId: null,
      changes: { stage: { from: names[s - 1], to: names[s] } },
    });
  }
  // Notes: the facts first, then the weekly cadence.
  let notes: string | null = null;
  const note = (at: number, text: string) => {
    if (at >= closeAt) return;
    activities.push({
      type: 'deal_updated',
      at: new Date(at),
      description: 'Updated notes',
      contactId: null,
      changes: { notes: { from: notes, to: text } },
    });
    notes = text;
  };
  const early = (days: number) => created.getTime() + r.next() * days * DAY;
  const facts: Array<[boolean, readonly string[]]> = [
    [pain, PAIN],
    [metrics, METRICS],
    [criteria, CRITERIA],
    [competition, COMPETITION],
  ];
  const factNotes = facts
    .filter(([has]) => has)
    .map(([, bank]) => ({ at: early(21), text: r.pick(bank) }))
    .sort((a, b) => a.at - b.at);
  const rate = 1.2 * Math.exp(0.3 * q);
  let t = created.getTime();
  const cadence: Array<{ at: number; text: string }> = [];
  for (;;) {
    const quiet = t >= quietFrom;
    t += (-Math.log(1 - r.next()) / (quiet ? rate / 8 : rate)) * 7 * DAY;
    if (t >= closeAt) break;
    const late = !won && t >= quietFrom;
    const mood = r.next();
    const text =
      late && mood < 0.5
        ? r.pick(BAD)
        : mood < 0.25
          ? r.pick(GOOD)
          : mood < 0.35
            ? r.pick(BAD)
            : r.pick(NEUTRAL);
    cadence.push({ at: t, text });
  }
  for (const n of [...factNotes, ...cadence].sort((a, b) => a.at - b.at)) note(n.at, n.text);

  let stageName = names[0] as string;
  if (closeAt <= now.getTime()) {
    const closed = won ? 'Closed Won' : 'Closed Lost';
    activities.push({
      type: 'stage_changed',
      at: new Date(closeAt),
      description: `Stage changed to ${closed}`,
      contactId: null,
      changes: { stage: { from: names[lastStage], to: closed } },
    });
    stageName = closed;
  } else {
    for (const a of activities)
      if (a.type === 'stage_changed' && a.at.getTime() <= now.getTime())
        stageName = String(a.changes?.stage?.to);
  }
  const visible = activities.filter((a) => a.at.getTime() <= now.getTime());
  const history: DealHistory = {
    deal: {
      id: uuidOf(r),
      title: `Deal ${index}`,
      companyName: `Company ${index % 300}`,
      value: Math.round(Math.exp(9 + r.normal())),
      currency: 'USD',
      notes,
      expectedCloseDate: new Date(created.getTime() + (30 + r.gamma(2, 20)) * DAY),
      createdAt: created,
    },
    stages: DEFAULT_STAGES,
    stageName,
    contacts: contacts.filter((c) => c.createdAt.getTime() <= now.getTime()),
    activities: visible,
  };
  return { history, p, won, probabilityWith };
}
