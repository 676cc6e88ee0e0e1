import { describe, expect, it } from 'vitest';
import { syntheticDeals } from '../eval/synthetic.ts';
import { generatorB } from '../eval/synthetic-b.ts';
import type { ContactFacts, DealSnapshot } from '../src/history.ts';
import { closedAt, snapshotAt } from '../src/history.ts';
import { fitWinModel, labelledSnapshotTimes, predictSnapshot } from '../src/prediction/model.ts';

const now = new Date('2026-11-01T00:00:00Z');
const HOUR = 3_600_000;

/** The snapshot with something added an hour before it was taken (and its log entry, when it has one). */
function added(s: DealSnapshot, change: (copy: DealSnapshot, at: Date) => void): DealSnapshot {
  const copy: DealSnapshot = {
    ...s,
    deal: { ...s.deal },
    contacts: s.contacts.map((c) => ({ ...c })),
    activities: [...s.activities],
    logged: [...s.logged],
  };
  change(copy, new Date(s.asOf.getTime() - HOUR));
  copy.activities.sort((a, b) => +a.at - +b.at);
  return copy;
}

let n = 0;
function contact(copy: DealSnapshot, at: Date, fields: Partial<ContactFacts>) {
  const id = `00000000-0000-4000-a000-${String(++n).padStart(12, '0')}`;
  copy.contacts.push({
    id,
    name: `Added ${n}`,
    title: null,
    role: 'end_user',
    influence: 'high',
    engagement: 'high',
    sentiment: 'neutral',
    notes: null,
    createdAt: at,
    ...fields,
  });
  copy.activities.push({
    type: 'contact_added',
    at,
    description: 'Contact added',
    contactId: id,
    changes: null,
  });
}
function note(copy: DealSnapshot, at: Date, sentence: string) {
  const to = `${copy.deal.notes ? `${copy.deal.notes} ` : ''}${sentence}`;
  copy.activities.push({
    type: 'deal_updated',
    at,
    description: 'Updated notes',
    contactId: null,
    changes: { notes: { from: copy.deal.notes, to } },
  });
  copy.deal.notes = to;
}

/** Bad news, each added on its own. Some are written to tempt a scorer: evidence words inside bad news. */
const BAD_NEWS: Array<[string, (copy: DealSnapshot, at: Date) => void]> = [
  ['a competitor in the notes', (c, at) => note(c, at, 'Competitor Initech is also in the running.')],
  [
    'a competitor written with evidence words',
    (c, at) =>
      note(c, at, 'Competing RFP: Initech pitches ROI, a pilot, legal terms and a decision timeline.'),
  ],
  [
    'a call about the competition',
    (c, at) =>
      c.activities.push({
        type: 'call',
        at,
        description: 'Call: they are also evaluating Hooli after a great demo.',
        contactId: null,
        changes: null,
      }),
  ],
  ['concerns in the notes', (c, at) => note(c, at, 'Concerns about price; they want to postpone.')],
  [
    'a logged call voicing concerns, a stakeholder taking part',
    (c, at) =>
      c.logged.push({
        id: `call-${++n}`,
        type: 'call',
        subject: 'Discovery call',
        body: 'They are also evaluating Hooli. Concerns about price.',
        at,
        dueAt: null,
        status: null,
        completedAt: null,
        participants: c.contacts.filter((x) => x.engagement !== 'high').map((x) => x.id),
      }),
  ],
  [
    'a logged note of competition with evidence words',
    (c, at) =>
      c.logged.push({
        id: `note-${++n}`,
        type: 'note',
        subject: 'Competing RFP: Initech pitches ROI and a pilot',
        body: null,
        at,
        dueAt: null,
        status: null,
        completedAt: null,
        participants: [],
      }),
  ],
  ['a blocker', (c, at) => contact(c, at, { role: 'blocker', title: 'Head of Procurement' })],
  [
    'a blocker with negative sentiment',
    (c, at) => contact(c, at, { role: 'blocker', sentiment: 'negative', title: 'Legal counsel' }),
  ],
  ['a negative champion', (c, at) => contact(c, at, { role: 'champion', sentiment: 'negative' })],
  [
    'a negative economic buyer with a legal title',
    (c, at) => contact(c, at, { role: 'economic_buyer', sentiment: 'negative', title: 'General counsel' }),
  ],
  [
    'a supportive contact turning negative',
    (c, at) => {
      const person = c.contacts.find((x) => x.role !== 'blocker' && x.sentiment !== 'negative');
      if (!person) return;
      c.activities.push({
        type: 'contact_updated',
        at,
        description: 'Contact updated',
        contactId: person.id,
        changes: { sentiment: { from: person.sentiment, to: 'negative' } },
      });
      person.sentiment = 'negative';
    },
  ],
];

/** Open deals now and closed deals while they were open, from both generators (some of them stale). */
function snapshots(): DealSnapshot[] {
  const out: DealSnapshot[] = [];
  for (const deals of [
    syntheticDeals({ deals: 250, now, seed: 31 }),
    generatorB({ deals: 250, now, seed: 32, mode: 'timeline' }),
    generatorB({ deals: 150, now, seed: 33, mode: 'api' }),
  ])
    for (const d of deals) {
      const times = labelledSnapshotTimes(d.history, now)?.times ?? [now];
      for (const t of times.filter((_, k) => k % 3 === 0)) out.push(snapshotAt(d.history, t));
    }
  return out;
}

describe('the prior (no history) never rewards bad news', () => {
  const all = snapshots();
  for (const [name, change] of BAD_NEWS)
    it(`${name} never raises the probability (${all.length} deals)`, () => {
      const raised: string[] = [];
      let lowered = 0;
      for (const s of all) {
        if (s.stage.type !== 'open') continue;
        const before = predictSnapshot(s, { staleAfterDays: 14, winModel: null }).win_probability;
        const after = predictSnapshot(added(s, change), {
          staleAfterDays: 14,
          winModel: null,
        }).win_probability;
        if (after > before) raised.push(`${s.deal.title} at ${s.asOf.toISOString()}: ${before} -> ${after}`);
        if (after < before) lowered++;
      }
      expect(raised).toEqual([]);
      expect(lowered).toBeGreaterThan(all.length / 4);
    });
});

describe('the fitted model never counts added bad news as support', () => {
  // Adding bad news changes only risk features (which can only lower the odds): the supportive reading of
  // the deal, its stakeholders, activity and pillars, stays as it was.
  const deals = generatorB({ deals: 700, now, seed: 34, mode: 'timeline' });
  const cutoff = new Date(now.getTime() - 100 * 86_400_000);
  const model = fitWinModel(
    deals.filter((d) => closedAt(d.history) < cutoff).map((d) => d.history),
    cutoff,
  );
  const open = snapshots().filter((s) => s.stage.type === 'open');
  for (const [name, change] of BAD_NEWS.filter(([n]) => n !== 'a supportive contact turning negative'))
    it(`${name} never raises the fitted probability`, () => {
      expect(model).not.toBeNull();
      const raised: string[] = [];
      for (const s of open) {
        const before = predictSnapshot(s, { staleAfterDays: 14, winModel: model }).win_probability;
        const after = predictSnapshot(added(s, change), {
          staleAfterDays: 14,
          winModel: model,
        }).win_probability;
        if (after > before) raised.push(`${s.deal.title}: ${before} -> ${after}`);
      }
      expect(raised).toEqual([]);
    });
});
