import type { DealHistory } from '../src/history.ts';

/** One driver changed on an open deal, to see how far the answer moves (the outside test's probes). */
export type Change = { kind: 'value'; value: number } | { kind: 'competitor' } | { kind: 'negative_blocker' };

/** A generated deal with what the generator knows and the CRM does not: its true win probability. */
export interface SyntheticDeal {
  history: DealHistory;
  /** The probability the outcome was drawn from. */
  p: number;
  won: boolean;
  /** The true probability had the deal been created with this change (the generator's own formula). */
  probabilityWith: (change: Change) => number;
}

const HOUR = 3_600_000;

/**
 * The deal as the CRM would record the change an hour before `asOf`: a new value, a competitor named in the
 * notes, or a blocker with negative sentiment added as a contact (each with its activity-log entry).
 */
export function applyChange(h: DealHistory, change: Change, asOf: Date): DealHistory {
  const at = new Date(asOf.getTime() - HOUR);
  const copy: DealHistory = {
    ...h,
    deal: { ...h.deal },
    contacts: [...h.contacts],
    activities: [...h.activities],
  };
  if (change.kind === 'value') {
    copy.activities.push({
      type: 'deal_updated',
      at,
      description: 'Updated value',
      contactId: null,
      changes: { value: { from: h.deal.value, to: change.value } },
    });
    copy.deal.value = change.value;
  } else if (change.kind === 'competitor') {
    const notes = `${h.deal.notes ? `${h.deal.notes} ` : ''}Competitor Initech is also in the running.`;
    copy.activities.push({
      type: 'deal_updated',
      at,
      description: 'Updated notes',
      contactId: null,
      changes: { notes: { from: h.deal.notes, to: notes } },
    });
    copy.deal.notes = notes;
  } else {
    const id = `00000000-0000-4000-a000-${String(h.contacts.length + 1).padStart(12, '0')}`;
    copy.contacts.push({
      id,
      name: 'Bo Blocker',
      title: 'Head of Procurement',
      role: 'blocker',
      influence: 'high',
      engagement: 'medium',
      sentiment: 'negative',
      notes: null,
      createdAt: at,
    });
    copy.activities.push({
      type: 'contact_added',
      at,
      description: 'Contact added',
      contactId: id,
      changes: null,
    });
  }
  return copy;
}
