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

/**
 * An activity a person logged on the deal (`POST /activities`, table `engagements`): a note, a task, a call,
 * a meeting or an e-mail, with the contacts who took part. Its id is what the analysis cites.
 */
export interface LoggedActivityFacts {
  id: string;
  type: string;
  subject: string;
  body: string | null;
  /** When it happened; a task's is its creation. */
  at: Date;
  dueAt: Date | null;
  /** A task's status now (a snapshot reads it as of its moment from `completedAt`). */
  status: 'open' | 'done' | null;
  completedAt: Date | null;
  /** Contacts who took part. */
  participants: string[];
}

/** Logged activity types with the customer on the line: a call or a meeting (an e-mail's direction is not recorded). */
export const TWO_WAY_TYPES = new Set(['call', 'meeting']);

/** A custom field of the organization's deals the AI may read (docs/ai.md). */
export interface CustomFieldFacts {
  key: string;
  label: string;
  type: string;
  /** The MEDDPICC pillar the field is evidence for (`ai_hint`), if any. */
  aiHint: string | null;
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
  /** The deal's custom field values by key (`custom`); optional like the lead source. */
  custom?: Record<string, unknown>;
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
  /** Activities people logged on the deal (optional: a caller without them gets a model that never uses them). */
  logged?: LoggedActivityFacts[];
  /** The organization's active custom fields on deals (the same list for every deal of one organization). */
  customFields?: CustomFieldFacts[];
  /**
   * The values its stage and expected close date held, oldest first (`field_history`, docs/api/history.md).
   * Optional: without it the derived facts (close date pushes, days in the stage) are unknown, the analysis
   * names neither and the win model never learns them.
   */
  fieldHistory?: FieldValueFacts[];
}

/** One value a deal's stage or expected close date held, from `at` (a row of its field history). */
export interface FieldValueFacts {
  field: 'stage_id' | 'expected_close_date';
  /** The stage's id, or the date in ISO 8601; null when unset. */
  value: string | null;
  at: Date;
  /** The change's event (null for a value recorded when history began). */
  eventId: string | null;
}

/** A move of the expected close date: from one date to another, when, by which event. */
export interface CloseDateMove {
  from: Date;
  to: Date;
  at: Date;
  eventId: string | null;
}

/** What the field history says of a deal at a moment (HistoryFacts of its snapshot). */
export interface HistoryFacts {
  /** Moves of the close date to a later date up to the moment, oldest first. */
  pushes: CloseDateMove[];
  /** Moves to an earlier date. */
  pulledIn: number;
  /** The stage it was in then (id) and since when: its last stage change, or its first recorded value. */
  stageId: string | null;
  stageSince: Date | null;
  stageEventId: string | null;
}

/** A close date move cited: its dates, when and by which event (the field history's `event_id`). */
export const citeMove = (m: CloseDateMove) =>
  `${m.from.toISOString().slice(0, 10)} → ${m.to.toISOString().slice(0, 10)} on ${m.at.toISOString().slice(0, 10)}${m.eventId ? `, event ${m.eventId}` : ''}`;

export const NO_HISTORY_FACTS: HistoryFacts = {
  pushes: [],
  pulledIn: 0,
  stageId: null,
  stageSince: null,
  stageEventId: null,
};

/**
 * The facts as of `t` (ms), read only from values recorded then or before (a training snapshot of a closed
 * deal never sees a move made later). A first date set is no move; a date cleared and set again compares
 * with the last date, as `GET /deals/{id}/history/summary` counts them.
 */
export function historyFactsAt(values: readonly FieldValueFacts[] | undefined, t: number): HistoryFacts {
  if (!values || values.length === 0) return NO_HISTORY_FACTS;
  const facts: HistoryFacts = { ...NO_HISTORY_FACTS, pushes: [] };
  let lastDate: Date | null = null;
  for (const v of values) {
    if (v.at.getTime() > t) break;
    if (v.field === 'stage_id') {
      if (v.value !== facts.stageId || facts.stageSince === null) {
        facts.stageId = v.value;
        facts.stageSince = v.at;
        facts.stageEventId = v.eventId;
      }
    } else if (v.value !== null) {
      const date = new Date(v.value);
      if (lastDate && date.getTime() > lastDate.getTime())
        facts.pushes.push({ from: lastDate, to: date, at: v.at, eventId: v.eventId });
      else if (lastDate && date.getTime() < lastDate.getTime()) facts.pulledIn++;
      lastDate = date;
    }
  }
  return facts;
}

/**
 * Days a deal spent in each stage it left (by stage id, each visit added up), from its field history:
 * what an organization's typical time in a stage is read from.
 */
export function stageDaysSpent(values: readonly FieldValueFacts[] | undefined): Map<string, number> {
  const spent = new Map<string, number>();
  let current: { id: string | null; since: number } | null = null;
  for (const v of values ?? []) {
    if (v.field !== 'stage_id') continue;
    if (current && current.id !== null && v.value !== current.id)
      spent.set(current.id, (spent.get(current.id) ?? 0) + (v.at.getTime() - current.since) / DAY_MS);
    if (!current || v.value !== current.id) current = { id: v.value, since: v.at.getTime() };
  }
  return spent;
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
  /** Activities people logged up to `asOf`, oldest first; a task's status as it was then. */
  logged: LoggedActivityFacts[];
  customFields: CustomFieldFacts[];
  /** Stage moves before `asOf`: to a later or an earlier open stage. */
  stageMoves: { forward: number; back: number };
  /** Close date pushes and the time in the stage, from the field history up to `asOf`. */
  fieldFacts: HistoryFacts;
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
  const custom: Record<string, unknown> = { ...(history.deal.custom ?? {}) };
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
        // A custom value set later (say, a loss reason filled in at the close) is no part of the past.
        else if (field.startsWith('custom.')) {
          const key = field.slice('custom.'.length);
          if (change.from == null) delete custom[key];
          else custom[key] = change.from;
        }
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
  if (history.deal.custom) deal.custom = custom;
  const logged = (history.logged ?? [])
    .filter((a) => a.at.getTime() <= t)
    .map((a) => {
      if (a.type !== 'task') return a;
      const done = a.completedAt !== null && a.completedAt.getTime() <= t;
      return done === (a.status === 'done')
        ? a
        : { ...a, status: done ? ('done' as const) : ('open' as const) };
    })
    .sort((x, y) => +x.at - +y.at || x.id.localeCompare(y.id));
  return {
    asOf,
    deal,
    stage,
    stages,
    contacts: [...contacts.values()].filter((c) => c.createdAt.getTime() <= t),
    activities,
    logged,
    customFields: history.customFields ?? [],
    stageMoves,
    fieldFacts: historyFactsAt(history.fieldHistory, t),
  };
}

/** A logged activity's text as a person wrote it: its subject and body. */
export const loggedText = (a: Pick<LoggedActivityFacts, 'subject' | 'body'>): string =>
  [a.subject, a.body].filter(Boolean).join('. ');

/** Open tasks whose due date passed at the snapshot, oldest due first. */
export const overdueTasks = (s: Pick<DealSnapshot, 'logged' | 'asOf'>): LoggedActivityFacts[] =>
  s.logged
    .filter(
      (a) => a.type === 'task' && a.status === 'open' && a.dueAt && a.dueAt.getTime() < s.asOf.getTime(),
    )
    .sort((x, y) => +(x.dueAt as Date) - +(y.dueAt as Date));

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
