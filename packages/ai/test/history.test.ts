import { describe, expect, it } from 'vitest';
import { attentionReasons } from '../src/briefing/model.ts';
import { type DealHistory, type FieldValueFacts, historyFactsAt, snapshotAt } from '../src/history.ts';
import { labelledSnapshotTimes, trainingSet } from '../src/prediction/model.ts';

const STAGES: DealHistory['stages'] = [
  { name: 'Lead', type: 'open', position: 1, probability: 10 },
  { name: 'Proposal', type: 'open', position: 2, probability: 50 },
  { name: 'Won', type: 'won', position: 3, probability: 100 },
  { name: 'Lost', type: 'lost', position: 4, probability: 0 },
];
const day = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 86_400_000);

/** Created on day 0, moved to Proposal on day 10, a contact soured and notes changed on day 29, lost on day 30. */
function lostDeal(): DealHistory {
  return {
    deal: {
      id: 'd1',
      title: 'T',
      companyName: null,
      value: 900,
      currency: 'USD',
      notes: 'Lost to competitor Globex',
      expectedCloseDate: null,
      createdAt: day(0),
    },
    stages: STAGES,
    stageName: 'Lost',
    contacts: [
      {
        id: 'c1',
        name: 'Ann',
        title: null,
        role: 'champion',
        influence: 'high',
        engagement: 'low',
        sentiment: 'negative',
        notes: null,
        createdAt: day(1),
      },
      {
        id: 'c2',
        name: 'Late',
        title: null,
        role: 'economic_buyer',
        influence: null,
        engagement: null,
        sentiment: null,
        notes: null,
        createdAt: day(29),
      },
    ],
    activities: [
      { type: 'deal_created', at: day(0), description: 'created', contactId: null, changes: null },
      { type: 'contact_added', at: day(1), description: 'added', contactId: 'c1', changes: null },
      {
        type: 'stage_changed',
        at: day(10),
        description: 'moved',
        contactId: null,
        changes: { stage: { from: 'Lead', to: 'Proposal' } },
      },
      {
        type: 'contact_updated',
        at: day(29),
        description: 'soured',
        contactId: 'c1',
        changes: {
          sentiment: { from: 'positive', to: 'negative' },
          engagement_level: { from: 'high', to: 'low' },
        },
      },
      {
        type: 'deal_updated',
        at: day(29),
        description: 'Updated notes',
        contactId: null,
        changes: { notes: { from: 'Going well', to: 'Lost to competitor Globex' } },
      },
      {
        type: 'stage_changed',
        at: day(30),
        description: 'lost',
        contactId: null,
        changes: { stage: { from: 'Proposal', to: 'Lost' } },
      },
      { type: 'deal_analyzed', at: day(20), description: 'analysis', contactId: null, changes: null },
    ],
  };
}

describe('a snapshot is the deal as it was then', () => {
  it('undoes later changes and leaves out later contacts, activities and the AI’s own entries', () => {
    const s = snapshotAt(lostDeal(), day(20));
    expect(s.stage.name).toBe('Proposal');
    expect(s.deal.notes).toBe('Going well');
    expect(s.contacts.map((c) => [c.name, c.sentiment, c.engagement])).toEqual([['Ann', 'positive', 'high']]);
    expect(s.activities.map((a) => a.type)).toEqual(['deal_created', 'contact_added', 'stage_changed']);
    expect(s.stageMoves).toEqual({ forward: 1, back: 0 });
  });

  it('before the first stage move it sits in the first stage', () => {
    expect(snapshotAt(lostDeal(), day(5)).stage.name).toBe('Lead');
  });
});

describe('training never sees how a deal closed', () => {
  it('takes snapshots on the 14-day grid, more than a day before the close', () => {
    const labelled = labelledSnapshotTimes(lostDeal(), day(60));
    expect(labelled?.label).toBe(0);
    for (const t of labelled?.times ?? []) expect(t.getTime()).toBeLessThan(day(29).getTime());
    expect(labelled?.times.length).toBeGreaterThan(0);
    // What the closing day wrote (the competitor note, the soured champion) is in none of them.
    for (const t of labelled?.times ?? []) {
      const s = snapshotAt(lostDeal(), t);
      expect(s.deal.notes ?? '').not.toMatch(/competitor/);
      expect(s.contacts.every((c) => c.sentiment !== 'negative')).toBe(true);
    }
  });

  it('leaves out open deals and deals closed after the fit', () => {
    const open = { ...lostDeal(), stageName: 'Proposal', activities: lostDeal().activities.slice(0, 3) };
    expect(labelledSnapshotTimes(open, day(60))).toBeNull();
    expect(labelledSnapshotTimes(lostDeal(), day(25))).toBeNull();
    expect(trainingSet([open], day(60)).deals).toBe(0);
  });
});

describe('the field history as of a moment', () => {
  const close = (n: number, at: number, eventId = `e${at}`): FieldValueFacts => ({
    field: 'expected_close_date',
    value: n < 0 ? null : day(n).toISOString(),
    at: day(at),
    eventId,
  });
  const stage = (id: string, at: number): FieldValueFacts => ({
    field: 'stage_id',
    value: id,
    at: day(at),
    eventId: `s${at}`,
  });
  const values = [
    stage('lead', 0),
    close(30, 0),
    close(40, 5),
    close(35, 6),
    close(-1, 7),
    close(50, 8),
    stage('proposal', 10),
    close(60, 20),
  ];

  it('counts pushes as the summary does (a cleared date compares with the last one), citing each', () => {
    const facts = historyFactsAt(values, day(30).getTime());
    expect(facts.pushes.map((m) => [m.from, m.to, m.eventId])).toEqual([
      [day(30), day(40), 'e5'],
      [day(35), day(50), 'e8'],
      [day(50), day(60), 'e20'],
    ]);
    expect(facts.pulledIn).toBe(1);
    expect(facts).toMatchObject({ stageId: 'proposal', stageSince: day(10), stageEventId: 's10' });
  });

  it('sees nothing recorded after the moment: a training snapshot before a push does not know it', () => {
    const facts = historyFactsAt(values, day(9).getTime());
    expect(facts.pushes).toHaveLength(2);
    expect(facts).toMatchObject({ stageId: 'lead', stageSince: day(0) });
    const deal = { ...lostDeal(), fieldHistory: values };
    expect(snapshotAt(deal, day(19)).fieldFacts.pushes).toHaveLength(2);
    expect(snapshotAt(deal, day(21)).fieldFacts.pushes).toHaveLength(3);
    expect(snapshotAt(lostDeal(), day(21)).fieldFacts.pushes).toEqual([]);
  });
});

describe('the briefing and coaching name a listed deal whose close date keeps moving', () => {
  const row = (count: number) => ({
    id: 'd1',
    title: 'Slipping',
    company: null,
    value: 1,
    currency: 'EUR',
    stage: 'Proposal',
    expected_close_date: null,
    days_idle: 1,
    deal_health: null,
    negative_stakeholders: 0,
    attention: {
      single_threaded_with: null,
      overdue_tasks: 0,
      oldest_overdue: null,
      close_date_pushes: { count, last: { from: day(40), to: day(60), at: day(20), eventId: 'e20' } },
    },
  });

  it('from two pushes on, citing the last move', () => {
    expect(attentionReasons(row(2))).toEqual([
      'close date pushed 2 times, last 2026-02-10 → 2026-03-02 on 2026-01-21, event e20',
    ]);
    expect(attentionReasons(row(1))).toEqual([]);
  });
});
