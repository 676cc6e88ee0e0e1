import type { ActivityFacts, ContactFacts, DealHistory, StageFacts } from '../src/history.ts';
import { type Random, seededRandom } from './random.ts';
import type { Change, SyntheticDeal } from './scenario.ts';

/**
 * A second synthetic organization, written apart from the first (synthetic.ts) so the model is not tuned
 * to one process. Different pipeline, different drivers and strengths, a different link function:
 *
 * - Pipeline: Discovery 15%, Demo 35%, Trial 60%, Commit 85%, then Signed (won) or Dropped (lost).
 * - Each deal has an account fit u ~ N(0, 1). Lead source: Referral 18%, Partner 14%, Inbound 30%,
 *   Outbound 25%, Trade show 9%, none 4%. Value: log-normal around 24,000 (sd 1.0 in log).
 * - 1-6 stakeholders: a champion with probability 0.5, then economic buyer, technical buyer, end users,
 *   influencers, an executive sponsor; engaged (high/medium) with probability Φ(0.5u + 0.1), positive
 *   with probability clamp(0.3 + 0.15u), negative 8%. A blocker with probability 0.18 (negative 75%).
 * - Notes name a competitor with probability 0.35 (in varied words), the customer's pain with Φ(0.4u).
 * - An expected close date 14 + Gamma(2, 25) days after creation (none for 15%).
 * - Latent η = -0.3 + lead source (Referral +0.9, Partner +0.4, Outbound -0.7, Trade show -0.3)
 *   - 1.1 tanh(ln(value / 24,000) / 1.2) + 0.8 engaged champion (0.25 if not engaged) + 0.45 economic buyer
 *   + 0.5 engaged champion AND engaged economic buyer + 0.2 per positive stakeholder (up to 2)
 *   - 0.55 per negative non-blocker - (0.8 + 0.6 if negative) per blocker (up to 2) - 0.85 competitor
 *   + 0.4 pain - 0.008 (days to close - 60) (within ±0.6; no date -0.35) + 0.45 per stage above Discovery
 *   at creation (API mode) + 0.6 u.
 *   P(won) = 0.04 + 0.9 Φ(η / 1.6): a probit with a floor and a ceiling, not a logistic.
 * - Two ways to record it. `api`: every deal created within minutes, in its stage, contacts and notes
 *   with it, the closed ones moved to Signed or Dropped seconds later (as a client of the REST API would
 *   load an organization). `timeline`: deals created over 600 days that move through the stages (lost deals
 *   stop early, some move back), calls and meetings logged at a rate that fades for deals that will be lost,
 *   a supportive contact of some lost deals turns negative late, and some values are revised mid-way.
 */
export const STAGES_B: StageFacts[] = [
  { name: 'Discovery', type: 'open', position: 1, probability: 15 },
  { name: 'Demo', type: 'open', position: 2, probability: 35 },
  { name: 'Trial', type: 'open', position: 3, probability: 60 },
  { name: 'Commit', type: 'open', position: 4, probability: 85 },
  { name: 'Signed', type: 'won', position: 5, probability: 100 },
  { name: 'Dropped', type: 'lost', position: 6, probability: 0 },
];

const DAY = 86_400_000;
const TYPICAL_VALUE = 24_000;
const LEAD_SOURCES: Array<[string | null, number, number]> = [
  ['Referral', 0.18, 0.9],
  ['Partner', 0.14, 0.4],
  ['Inbound', 0.3, 0],
  ['Outbound', 0.25, -0.7],
  ['Trade show', 0.09, -0.3],
  [null, 0.04, 0],
];
const COMPETITOR_LINES = [
  'Competitor Initech pitched a lower price.',
  'They are also evaluating Hooli.',
  'Incumbent vendor Vandelay wants to renew.',
  'Shortlisted against Acme and one more.',
];
const PAIN_LINES = [
  'Pain: month-end close takes two weeks.',
  'Their manual reconciliation causes errors every quarter.',
  'Struggling to keep up with audit requests.',
];
const PLAIN_LINES = ['Intro call held.', 'Shared pricing sheet.', 'Follow-up booked.'];
const CALLS_GOOD = ['Call: walked through the rollout plan', 'Meeting: team is keen, next step agreed'];
const CALLS_FLAT = ['Call: status check', 'Meeting: answered product questions', 'Email sent'];
const FIRST = ['Ada', 'Bram', 'Cleo', 'Dev', 'Esme', 'Finn', 'Gia', 'Hugo', 'Iris', 'Jon'];
const LAST = ['Park', 'Ruiz', 'Okafor', 'Lind', 'Sato', 'Weber', 'Moreau', 'Khan'];

/** Standard normal CDF (Abramowitz-Stegun 7.1.26 on erf). */
function phi(x: number): number {
  const t = 1 / (1 + (0.3275911 * Math.abs(x)) / Math.SQRT2);
  const poly =
    t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-(x * x) / 2);
  return x >= 0 ? 0.5 * (1 + erf) : 0.5 * (1 - erf);
}
const winChance = (eta: number) => 0.04 + 0.9 * phi(eta / 1.6);

interface Person {
  role: string;
  engaged: boolean;
  sentiment: 'positive' | 'neutral' | 'negative';
}

interface Drawn {
  u: number;
  leadSource: string | null;
  leadEffect: number;
  value: number;
  people: Person[];
  competitor: boolean;
  pain: boolean;
  closeInDays: number | null;
  stageIndex: number;
}

function etaOf(d: Drawn, api: boolean): number {
  const champion = d.people.find((p) => p.role === 'champion');
  const buyer = d.people.find((p) => p.role === 'economic_buyer');
  const blockers = d.people.filter((p) => p.role === 'blocker').slice(0, 2);
  const positives = Math.min(
    2,
    d.people.filter((p) => p.role !== 'blocker' && p.sentiment === 'positive').length,
  );
  const negatives = d.people.filter((p) => p.role !== 'blocker' && p.sentiment === 'negative').length;
  const close = d.closeInDays === null ? -0.35 : Math.max(-0.6, Math.min(0.6, -0.008 * (d.closeInDays - 60)));
  return (
    -0.3 +
    d.leadEffect -
    1.1 * Math.tanh(Math.log(d.value / TYPICAL_VALUE) / 1.2) +
    (champion ? (champion.engaged ? 0.8 : 0.25) : 0) +
    (buyer ? 0.45 : 0) +
    (champion?.engaged && buyer?.engaged ? 0.5 : 0) +
    0.2 * positives -
    0.55 * negatives -
    blockers.reduce((sum, b) => sum + 0.8 + (b.sentiment === 'negative' ? 0.6 : 0), 0) -
    (d.competitor ? 0.85 : 0) +
    (d.pain ? 0.4 : 0) +
    close +
    (api ? 0.45 * d.stageIndex : 0) +
    0.6 * d.u
  );
}

function draw(r: Random): Drawn {
  const u = r.normal();
  let pick = r.next();
  let lead = LEAD_SOURCES[LEAD_SOURCES.length - 1] as [string | null, number, number];
  for (const entry of LEAD_SOURCES) {
    if (pick < entry[1]) {
      lead = entry;
      break;
    }
    pick -= entry[1];
  }
  const value = Math.round((TYPICAL_VALUE * Math.exp(r.normal())) / 100) * 100 || 100;
  const people: Person[] = [];
  const person = (role: string): Person => {
    const engaged = r.next() < phi(0.5 * u + 0.1);
    const pos = Math.max(0.05, Math.min(0.8, 0.3 + 0.15 * u));
    const roll = r.next();
    const sentiment = roll < pos ? 'positive' : roll < pos + 0.08 ? 'negative' : 'neutral';
    return { role, engaged, sentiment };
  };
  if (r.chance(0.5)) people.push(person('champion'));
  const others = 1 + Math.floor(r.next() * 4);
  const pool = [
    'economic_buyer',
    'technical_buyer',
    'end_user',
    'end_user',
    'influencer',
    'executive_sponsor',
  ];
  for (let k = 0; k < others && people.length < 6; k++) {
    const role = r.pick(pool);
    if (role !== 'end_user' && people.some((p) => p.role === role)) continue;
    people.push(person(role));
  }
  if (r.chance(0.18)) {
    const b = person('blocker');
    b.sentiment = r.chance(0.75) ? 'negative' : 'neutral';
    people.push(b);
  }
  const stageRoll = r.next() + 0.12 * u;
  return {
    u,
    leadSource: lead[0],
    leadEffect: lead[2],
    value,
    people,
    competitor: r.chance(0.35),
    pain: r.next() < phi(0.4 * u),
    closeInDays: r.chance(0.15) ? null : 14 + r.gamma(2, 25),
    stageIndex: stageRoll < 0.4 ? 0 : stageRoll < 0.7 ? 1 : stageRoll < 0.9 ? 2 : 3,
  };
}

let idCounter = 0;
const idOf = (r: Random) => {
  idCounter++;
  const hex = Array.from({ length: 20 }, () => Math.floor(r.next() * 16).toString(16)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(12, 15)}-b${hex.slice(15, 18)}-${String(idCounter).padStart(12, '0')}`;
};

function withChange(d: Drawn, change: Change): Drawn {
  if (change.kind === 'value') return { ...d, value: change.value };
  if (change.kind === 'competitor') return { ...d, competitor: true };
  return { ...d, people: [...d.people, { role: 'blocker', engaged: true, sentiment: 'negative' }] };
}

export interface GeneratorBOptions {
  deals: number;
  now: Date;
  seed: number;
  mode: 'api' | 'timeline';
  /** API mode: how many of the deals are closed (the rest stay open); by default two thirds. */
  closed?: number;
}

export function generatorB(options: GeneratorBOptions): SyntheticDeal[] {
  const r = seededRandom(options.seed * 7919 + 13);
  idCounter = 0;
  const out: SyntheticDeal[] = [];
  const closedCount = options.closed ?? Math.round((options.deals * 2) / 3);
  for (let i = 0; i < options.deals; i++) {
    const d = draw(r);
    const api = options.mode === 'api';
    const eta = etaOf(d, api);
    const p = winChance(eta);
    const won = r.chance(p);
    const history = api
      ? recordApi(r, d, i, options.now, options.deals, i < closedCount ? won : null)
      : recordTimeline(r, d, i, options.now, won);
    out.push({ history, p, won, probabilityWith: (change) => winChance(etaOf(withChange(d, change), api)) });
  }
  return out;
}

function contactsOf(r: Random, d: Drawn, at: (k: number) => Date): ContactFacts[] {
  return d.people.map((p, k) => ({
    id: idOf(r),
    name: `${r.pick(FIRST)} ${r.pick(LAST)}`,
    title: p.role === 'blocker' ? r.pick(['Head of Procurement', 'IT Director', 'Legal counsel']) : null,
    role: p.role,
    influence: r.chance(0.35) ? 'high' : r.chance(0.5) ? 'medium' : 'low',
    engagement: p.engaged ? (r.chance(0.5) ? 'high' : 'medium') : r.chance(0.6) ? 'low' : 'unknown',
    sentiment: p.sentiment,
    notes: null,
    createdAt: at(k),
  }));
}

function notesOf(r: Random, d: Drawn): string {
  const lines = [r.pick(PLAIN_LINES)];
  if (d.pain) lines.push(r.pick(PAIN_LINES));
  if (d.competitor) lines.push(r.pick(COMPETITOR_LINES));
  return lines.join(' ');
}

/** As a REST client loads an organization: everything at creation, the closed ones closed seconds later. */
function recordApi(
  r: Random,
  d: Drawn,
  i: number,
  now: Date,
  total: number,
  won: boolean | null,
): DealHistory {
  const created = new Date(now.getTime() - (total - i) * 6_000 - 60_000);
  const stage = STAGES_B[d.stageIndex] as StageFacts;
  const contacts = contactsOf(r, d, (k) => new Date(created.getTime() + 500 + 200 * k));
  const activities: ActivityFacts[] = [
    { type: 'deal_created', at: created, description: 'Deal created', contactId: null, changes: null },
    ...contacts.map(
      (c): ActivityFacts => ({
        type: 'contact_added',
        at: c.createdAt,
        description: 'Contact added',
        contactId: c.id,
        changes: null,
      }),
    ),
  ];
  let stageName = stage.name;
  if (won !== null) {
    stageName = won ? 'Signed' : 'Dropped';
    activities.push({
      type: 'stage_changed',
      at: new Date(created.getTime() + 4_000),
      description: `Stage changed from ${stage.name} to ${stageName}`,
      contactId: null,
      changes: { stage: { from: stage.name, to: stageName } },
    });
  }
  return {
    deal: {
      id: idOf(r),
      title: `Opportunity ${i}`,
      companyName: `Account ${i % 211}`,
      value: d.value,
      currency: 'EUR',
      notes: notesOf(r, d),
      expectedCloseDate: d.closeInDays === null ? null : new Date(created.getTime() + d.closeInDays * DAY),
      leadSource: d.leadSource,
      createdAt: created,
    },
    stages: STAGES_B,
    stageName,
    contacts,
    activities,
  };
}

/** Deals over 600 days with a life: stage moves, logged calls, late sentiment changes, revised values. */
function recordTimeline(r: Random, d: Drawn, i: number, now: Date, won: boolean): DealHistory {
  const created = new Date(now.getTime() - (20 + r.next() * 580) * DAY);
  const t0 = created.getTime();
  const size = Math.max(0.6, Math.min(1.8, 1 + 0.3 * Math.log(d.value / TYPICAL_VALUE)));
  const cycle = (won ? 25 + r.gamma(3, 12) : 12 + r.gamma(2, 16)) * size;
  const end = t0 + cycle * DAY;
  const at = (fraction: number) => new Date(t0 + fraction * cycle * DAY);
  const contacts = contactsOf(r, d, () => at(r.next() * 0.3));
  const activities: ActivityFacts[] = [
    { type: 'deal_created', at: created, description: 'Deal created', contactId: null, changes: null },
    ...contacts.map(
      (c): ActivityFacts => ({
        type: 'contact_added',
        at: c.createdAt,
        description: 'Contact added',
        contactId: c.id,
        changes: null,
      }),
    ),
  ];
  // Stage path: won deals reach Commit; lost ones stop early, some after moving back once.
  const names = STAGES_B.map((s) => s.name);
  const last = won ? 3 : r.pick([0, 1, 1, 2, 2, 3]);
  let current = 0;
  for (let k = 1; k <= last; k++) {
    activities.push({
      type: 'stage_changed',
      at: at(0.15 + (0.6 * k) / 4),
      description: `Stage changed from ${names[current]} to ${names[k]}`,
      contactId: null,
      changes: { stage: { from: names[current], to: names[k] } },
    });
    current = k;
  }
  if (!won && current >= 2 && r.chance(0.3)) {
    activities.push({
      type: 'stage_changed',
      at: at(0.85),
      description: `Stage changed from ${names[current]} to ${names[current - 1]}`,
      contactId: null,
      changes: { stage: { from: names[current], to: names[current - 1] } },
    });
    current -= 1;
  }
  // Notes: written early, the competitor line sometimes only later.
  let notes = notesOf(r, d);
  activities.push({
    type: 'deal_updated',
    at: at(0.05 + 0.3 * r.next()),
    description: 'Updated notes',
    contactId: null,
    changes: { notes: { from: null, to: notes } },
  });
  // Calls and meetings; the cadence fades towards the end for a deal that will be lost.
  const rate = 0.9 * Math.exp(0.25 * d.u);
  for (let t = t0; ; ) {
    const progress = (t - t0) / (cycle * DAY);
    const fade = won ? 1 : Math.max(0.25, 1 - progress);
    t += (-Math.log(1 - r.next()) / (rate * fade)) * 7 * DAY;
    if (t >= end) break;
    activities.push({
      type: r.chance(0.6) ? 'call' : 'meeting',
      at: new Date(t),
      description: won && r.chance(0.3) ? r.pick(CALLS_GOOD) : r.pick(CALLS_FLAT),
      contactId: null,
      changes: null,
    });
  }
  // Late souring: a supportive contact of a deal that will be lost turns negative.
  const supportive = contacts.filter((c) => c.role !== 'blocker' && c.sentiment !== 'negative');
  if (!won && supportive.length > 0 && r.chance(0.3)) {
    const c = r.pick(supportive);
    activities.push({
      type: 'contact_updated',
      at: at(0.6 + 0.3 * r.next()),
      description: 'Contact updated',
      contactId: c.id,
      changes: { sentiment: { from: c.sentiment, to: 'negative' } },
    });
    c.sentiment = 'negative';
  }
  // Revised values: a quarter of the deals change value mid-way.
  let value = d.value;
  if (r.chance(0.25)) {
    const revised = Math.round((value * (0.7 + 0.6 * r.next())) / 100) * 100;
    activities.push({
      type: 'deal_updated',
      at: at(0.5),
      description: 'Updated value',
      contactId: null,
      changes: { value: { from: value, to: revised } },
    });
    value = revised;
  }
  let stageName = names[current] as string;
  if (end <= now.getTime()) {
    stageName = won ? 'Signed' : 'Dropped';
    activities.push({
      type: 'stage_changed',
      at: new Date(end),
      description: `Stage changed to ${stageName}`,
      contactId: null,
      changes: { stage: { from: names[current], to: stageName } },
    });
  } else {
    // Open at `now`: the stage it has reached by then, and only what happened so far.
    stageName = names[0] as string;
    for (const a of [...activities].sort((x, y) => +x.at - +y.at))
      if (a.type === 'stage_changed' && a.at.getTime() <= now.getTime())
        stageName = String(a.changes?.stage?.to);
    for (const a of activities)
      if (a.type === 'contact_updated' && a.at.getTime() > now.getTime()) {
        const c = contacts.find((x) => x.id === a.contactId);
        if (c) c.sentiment = String(a.changes?.sentiment?.from);
      }
    for (const a of activities)
      if (a.type === 'deal_updated' && a.at.getTime() > now.getTime()) {
        if (a.changes?.value) value = Number(a.changes.value.from);
        if (a.changes?.notes) notes = '';
      }
  }
  const visible = activities.filter((a) => a.at.getTime() <= now.getTime());
  return {
    deal: {
      id: idOf(r),
      title: `Opportunity ${i}`,
      companyName: `Account ${i % 211}`,
      value,
      currency: 'EUR',
      notes: notes || null,
      expectedCloseDate: d.closeInDays === null ? null : new Date(t0 + d.closeInDays * DAY),
      leadSource: d.leadSource,
      createdAt: created,
    },
    stages: STAGES_B,
    stageName,
    contacts: contacts.filter((c) => c.createdAt.getTime() <= now.getTime()),
    activities: visible,
  };
}
