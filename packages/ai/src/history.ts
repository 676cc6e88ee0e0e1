/**
 * The plain data every chain starts from: a deal as it is now plus what happened to it (its activity log),
 * and the snapshot of it at a moment, rebuilt by undoing what the log says changed after that moment.
 * One snapshot function serves the deal being scored (as of now) and the organization's closed deals
 * (as of dates before they closed), so a model learns from exactly what it is later shown.
 */

export type StageType = 'open' | 'won' | 'lost';

export interface StageFacts {
  name: string;
  type: StageType;
  position: number;
  /** The stage's win probability in percent, as configured on the pipeline. */
  probability: number | null;
}

export interface ContactFacts {
  id: string;
  name: string;
  title: string | null;
  role: string;
  influence: string | null;
  engagement: string | null;
  sentiment: string | null;
  notes: string | null;
  createdAt: Date;
}

/** A recorded change: field name to its old and new value (the activity log's `changes`). */
export type Changes = Record<string, { from: unknown; to: unknown }>;

export interface ActivityFacts {
  type: string;
  at: Date;
  description: string | null;
  contactId: string | null;
  changes: Changes | null;
}

export interface DealFacts {
  id: string;
  title: string;
  companyName: string | null;
  value: number | null;
  currency: string | null;
  notes: string | null;
  expectedCloseDate: Date | null;
  /**
   * Where the deal came from (the deal's `lead_source`). Optional: a caller that does not pass it gets a
   * model that never uses it.
   */
  leadSource?: string | null;
  createdAt: Date;
}

/** A deal now: its fields, its pipeline, its contacts and its whole activity log (any order). */
export interface DealHistory {
  deal: DealFacts;
  /** The deal's pipeline, in order. */
  stages: StageFacts[];
  stageName: string;
  contacts: ContactFacts[];
  activities: ActivityFacts[];
}

/** Activity types the API writes itself; any other type is a person's own entry (a call, a note). */
export const RECORDED_ACTIVITY_TYPES = new Set([
  'deal_created',
  'deal_updated',
  'stage_changed',
  'contact_added',
  'contact_updated',
]);
/** Activities about the AI itself: they describe no contact with the customer and never count as activity. */
export const SYSTEM_ACTIVITY_TYPES = new Set(['deal_analyzed']);

/** Free text a person wrote in an activity: a notes change, or the description of a person's own entry. */
export function activityText(activity: Pick<ActivityFacts, 'type' | 'description' | 'changes'>): string {
  if (!RECORDED_ACTIVITY_TYPES.has(activity.type)) return activity.description ?? '';
  const notes = activity.changes?.notes?.to;
  return typeof notes === 'string' ? notes : '';
}

export interface DealSnapshot {
  asOf: Date;
  deal: DealFacts;
  stage: StageFacts;
  stages: StageFacts[];
  /** Contacts that existed at `asOf`, with the attributes they had then. */
  contacts: ContactFacts[];
  /** Customer-facing activities before `asOf`, oldest first. */
  activities: ActivityFacts[];
  /** Stage moves before `asOf`: to a later or an earlier open stage. */
  stageMoves: { forward: number; back: number };
}

const DEAL_FIELDS: Record<string, keyof DealFacts> = {
  title: 'title',
  company_name: 'companyName',
  value: 'value',
  currency: 'currency',
  notes: 'notes',
  expected_close_date: 'expectedCloseDate',
  lead_source: 'leadSource',
};
const CONTACT_FIELDS: Record<string, keyof ContactFacts> = {
  name: 'name',
  title: 'title',
  role_type: 'role',
  influence_level: 'influence',
  engagement_level: 'engagement',
  sentiment: 'sentiment',
  notes: 'notes',
};

function restored(field: keyof DealFacts | keyof ContactFacts, from: unknown): unknown {
  if (field === 'expectedCloseDate') return typeof from === 'string' ? new Date(from) : null;
  if (field === 'value') return from == null ? null : Number(from);
  if (field === 'role') return from ?? 'unknown';
  return from ?? null;
}

/** The deal as it was at `asOf`: later changes undone, later contacts and activities left out. */
export function snapshotAt(history: DealHistory, asOf: Date): DealSnapshot {
  const t = asOf.getTime();
  const deal: DealFacts = { ...history.deal };
  const contacts = new Map(history.contacts.map((c) => [c.id, { ...c }]));
  let stageName = history.stageName;
  const later = history.activities.filter((a) => a.at.getTime() > t).sort((a, b) => +b.at - +a.at);
  for (const a of later) {
    if (!a.changes) continue;
    if (a.type === 'stage_changed') {
      const from = a.changes.stage?.from;
      if (typeof from === 'string') stageName = from;
    } else if (a.type === 'deal_updated') {
      for (const [field, change] of Object.entries(a.changes)) {
        const prop = DEAL_FIELDS[field];
        if (prop) (deal as unknown as Record<string, unknown>)[prop] = restored(prop, change.from);
      }
    } else if (a.type === 'contact_updated' && a.contactId) {
      const contact = contacts.get(a.contactId);
      if (!contact) continue;
      for (const [field, change] of Object.entries(a.changes)) {
        const prop = CONTACT_FIELDS[field];
        if (prop) (contact as unknown as Record<string, unknown>)[prop] = restored(prop, change.from);
      }
    }
  }
  const stages = history.stages;
  const stage = stages.find((s) => s.name === stageName) ??
    stages.find((s) => s.type === 'open') ?? {
      name: stageName,
      type: 'open',
      position: 1,
      probability: null,
    };
  const position = new Map(stages.map((s) => [s.name, s]));
  const stageMoves = { forward: 0, back: 0 };
  const activities: ActivityFacts[] = [];
  for (const a of [...history.activities].sort((x, y) => +x.at - +y.at)) {
    if (a.at.getTime() > t || SYSTEM_ACTIVITY_TYPES.has(a.type)) continue;
    activities.push(a);
    if (a.type !== 'stage_changed') continue;
    const from = position.get(String(a.changes?.stage?.from));
    const to = position.get(String(a.changes?.stage?.to));
    if (from && to && to.type === 'open' && from.type === 'open') {
      if (to.position > from.position) stageMoves.forward++;
      else stageMoves.back++;
    }
  }
  return {
    asOf,
    deal,
    stage,
    stages,
    contacts: [...contacts.values()].filter((c) => c.createdAt.getTime() <= t),
    activities,
    stageMoves,
  };
}

/** When a closed deal closed: its last move into a won or lost stage, else its creation (created closed). */
export function closedAt(history: DealHistory): Date {
  const closedNames = new Set(history.stages.filter((s) => s.type !== 'open').map((s) => s.name));
  let at = history.deal.createdAt;
  for (const a of history.activities)
    if (a.type === 'stage_changed' && closedNames.has(String(a.changes?.stage?.to)) && a.at > at) at = a.at;
  return at;
}

export const DAY_MS = 86_400_000;
export const daysBetween = (from: Date, to: Date) => (to.getTime() - from.getTime()) / DAY_MS;
