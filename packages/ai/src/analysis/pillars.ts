import {
  activityText,
  type ContactFacts,
  type CustomFieldFacts,
  type DealSnapshot,
  daysBetween,
  type LoggedActivityFacts,
  loggedText,
  TWO_WAY_TYPES,
} from '../history.ts';
import { type EvidenceKind, evidences, mentions, type SignalKind } from '../lexicon.ts';

/** The eight MEDDPICC pillars, in the order of the acronym. */
export const PILLARS = [
  'metrics',
  'economic_buyer',
  'decision_criteria',
  'decision_process',
  'paper_process',
  'identified_pain',
  'champion',
  'competition',
] as const;
export type Pillar = (typeof PILLARS)[number];

export const PILLAR_LABELS: Record<Pillar, string> = {
  metrics: 'Metrics',
  economic_buyer: 'Economic buyer',
  decision_criteria: 'Decision criteria',
  decision_process: 'Decision process',
  paper_process: 'Paper process',
  identified_pain: 'Identified pain',
  champion: 'Champion',
  competition: 'Competition',
};

export const PILLAR_MAX = 10;

export interface PillarScore {
  pillar: Pillar;
  score: number;
  /** What in the data gave the points (and what took them away). */
  evidence: string[];
  /** What is missing for a full score, when something is. */
  gap: string | null;
  /** The evidence that gave points. */
  points: string[];
  /** The evidence that says what is missing or what took points away. */
  lacking: string[];
}

/** Engagement recorded on the contact's link: high or medium. */
export const engagedLevel = (c: ContactFacts) => c.engagement === 'high' || c.engagement === 'medium';

/** Logged activities whose text a person wrote about the deal: notes, calls, meetings, e-mails (a task is an intent). */
export const writtenLogged = (s: DealSnapshot): LoggedActivityFacts[] =>
  s.logged.filter((a) => a.type !== 'task');

/** The last call or meeting logged on the deal that each contact took part in (up to the snapshot). */
export function lastMet(s: DealSnapshot): Map<string, LoggedActivityFacts> {
  const met = new Map<string, LoggedActivityFacts>();
  // Oldest first, so the latest stays.
  for (const a of s.logged) if (TWO_WAY_TYPES.has(a.type)) for (const id of a.participants) met.set(id, a);
  return met;
}

/**
 * The deal's engaged stakeholders: engagement recorded high or medium, or a part in a call or meeting
 * logged on the deal. One definition for the analysis, the win model, the briefing and coaching (SQL:
 * briefing.service.ts).
 */
export function engagedContacts(s: DealSnapshot): ContactFacts[] {
  const met = lastMet(s);
  return s.contacts.filter((c) => engagedLevel(c) || met.has(c.id));
}

/** The last call or meeting logged on the deal, up to the snapshot (null when none). */
export const lastTwoWay = (s: DealSnapshot): LoggedActivityFacts | null =>
  s.logged.filter((a) => TWO_WAY_TYPES.has(a.type)).at(-1) ?? null;

const day = (d: Date) => d.toISOString().slice(0, 10);
/** How a logged activity is cited: its type, id and date. */
export const citeLogged = (a: LoggedActivityFacts) => `${a.type} ${a.id} on ${day(a.at)}`;

/** The MEDDPICC pillar a custom field's `ai_hint` names (the hint `identify_pain` is the pillar identified_pain). */
export const pillarOfHint = (hint: string | null): Pillar | null => {
  const pillar = hint === 'identify_pain' ? 'identified_pain' : hint;
  return (PILLARS as readonly string[]).includes(pillar ?? '') ? (pillar as Pillar) : null;
};

/** Whether a custom value says something: set, and not empty, false or zero. */
const hasValue = (v: unknown) =>
  v !== null &&
  v !== undefined &&
  v !== '' &&
  v !== false &&
  v !== 0 &&
  !(Array.isArray(v) && v.length === 0);

function shown(v: unknown): string {
  const text =
    typeof v === 'number'
      ? v.toLocaleString('en-US')
      : Array.isArray(v)
        ? v.map(String).join(', ')
        : typeof v === 'object'
          ? JSON.stringify(v)
          : String(v);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

/** The deal's custom fields whose `ai_hint` names this pillar and that hold a value, with how each is cited. */
export function hintedFields(
  s: DealSnapshot,
  pillar: Pillar,
): Array<{ field: CustomFieldFacts; text: string }> {
  const custom = s.deal.custom ?? {};
  return s.customFields
    .filter((f) => pillarOfHint(f.aiHint) === pillar && hasValue(custom[f.key]))
    .map((field) => ({ field, text: `${field.label} (custom.${field.key}): ${shown(custom[field.key])}` }));
}

const who = (c: ContactFacts) => (c.title ? `${c.name} (${c.title})` : c.name);
const clamp = (v: number) => Math.max(0, Math.min(PILLAR_MAX, v));

/** Everything a person wrote about the deal: its notes, its contacts' notes, their own activity entries. */
export const dealText = (s: DealSnapshot): string => dealTexts(s).join('\n');

/** Every piece of text a person wrote about the deal, each on its own: notes, contacts' notes, entries. */
export function dealTexts(s: DealSnapshot): string[] {
  return [
    s.deal.notes ?? '',
    ...s.contacts.map((c) => c.notes ?? ''),
    ...s.activities.map(activityText),
    ...writtenLogged(s).map(loggedText),
  ].filter(Boolean);
}

/** The pieces of text that carry a signal of this kind. */
export const signalTexts = (s: DealSnapshot, kind: SignalKind): string[] =>
  dealTexts(s).filter((t) => mentions(t, kind));

/** Free-text signals counted per piece of text (a note or an entry), so one long note counts once. */
export function textSignals(s: DealSnapshot): { positive: number; negative: number; competitor: number } {
  return {
    positive: signalTexts(s, 'positive').length,
    negative: signalTexts(s, 'negative').length,
    competitor: signalTexts(s, 'competitor').length,
  };
}

/** A text's sentences, so one sentence of bad news does not take a whole note's evidence with it. */
export const sentences = (text: string): string[] =>
  text
    .split(/(?<=[.!?;])\s+|\n+/)
    .map((t) => t.trim())
    .filter(Boolean);

/** The first sentence of the deal's text that carries a signal of this kind, quoted (at most 80 characters). */
export function quoteOf(s: DealSnapshot, kind: SignalKind): string | null {
  for (const text of signalTexts(s, kind)) {
    const sentence = sentences(text).find((t) => mentions(t, kind));
    if (sentence) return `“${sentence.length > 80 ? `${sentence.slice(0, 79)}…` : sentence}”`;
  }
  return null;
}

/** A contact who is bad news for the deal: a blocker, or anyone whose sentiment is negative. */
export const isAdverse = (c: ContactFacts) => c.role === 'blocker' || c.sentiment === 'negative';

const carriesBadNews = (sentence: string) =>
  mentions(sentence, 'competitor') || mentions(sentence, 'negative');

/** A text without its sentences of bad news (null when nothing else is left). */
function supportiveText(text: string): string | null {
  const good = sentences(text).filter((t) => !carriesBadNews(t));
  return good.length > 0 ? good.join(' ') : null;
}

/** What a supportive reading of the deal left out: adverse contacts and sentences of bad news. */
export interface SetAside {
  contacts: ContactFacts[];
  sentences: string[];
}

/**
 * The deal with its bad news set aside: blockers and negative contacts (and the log entries that added or
 * changed them) and every sentence that voices concerns or names competition. What counts as support (the
 * pillars, coverage, momentum) is read from this view, so bad news can never add to it; bad news is then
 * counted on its own, as a risk.
 */
export function supportView(s: DealSnapshot): { snapshot: DealSnapshot; setAside: SetAside } {
  const setAside: SetAside = { contacts: s.contacts.filter(isAdverse), sentences: [] };
  const adverse = new Set(setAside.contacts.map((c) => c.id));
  const keep = (text: string | null): string | null => {
    if (!text) return text;
    const bad = sentences(text).filter(carriesBadNews);
    if (bad.length === 0) return text;
    setAside.sentences.push(...bad);
    return supportiveText(text);
  };
  const activities = s.activities.flatMap((a) => {
    if (
      a.contactId &&
      adverse.has(a.contactId) &&
      (a.type === 'contact_added' || a.type === 'contact_updated')
    )
      return [];
    const text = activityText(a);
    if (!text) return [a];
    const kept = keep(text);
    if (kept === text) return [a];
    if (a.type === 'deal_updated' && a.changes?.notes) {
      // A notes change whose supportive reading adds no sentence (it only added bad news, or took text
      // away) is no support: it leaves the view, unless it changed other fields too.
      const before = a.changes.notes.from;
      const keptBefore = typeof before === 'string' ? supportiveText(before) : null;
      const had = new Set(sentences(keptBefore ?? ''));
      const adds = sentences(kept ?? '').some((t) => !had.has(t));
      const others = Object.keys(a.changes).filter((k) => k !== 'notes');
      if (!adds && others.length === 0) return [];
      return [{ ...a, changes: { ...a.changes, notes: { from: keptBefore, to: kept } } }];
    }
    if (kept === null) return [];
    return [{ ...a, description: kept }];
  });
  // A logged note, call or e-mail whose body (or subject, without one) only records bad news is no support
  // and no activity here; one that voices some keeps its other sentences, and its people get no
  // engagement from it (taking part in a call of bad news is no support).
  const logged = s.logged.flatMap((a) => {
    if (a.type === 'task') return [a];
    const subject = keep(a.subject);
    const body = a.body === null ? null : keep(a.body);
    if (subject === a.subject && body === a.body) return [a];
    if ((a.body === null ? subject : body) === null) return [];
    return [{ ...a, subject: subject ?? '', body, participants: [] }];
  });
  return {
    snapshot: {
      ...s,
      logged,
      deal: { ...s.deal, notes: keep(s.deal.notes) },
      contacts: s.contacts.filter((c) => !adverse.has(c.id)).map((c) => ({ ...c, notes: keep(c.notes) })),
      activities,
    },
    setAside,
  };
}

/** A stakeholder-led pillar: someone in the role, engaged, supportive, influential. */
function rolePillar(
  people: ContactFacts[],
  roleName: string,
  met: Map<string, LoggedActivityFacts>,
  setAside: ContactFacts[] = [],
): { score: number; evidence: string[] } {
  if (people.length === 0) {
    const role = roleName.replaceAll(' ', '_');
    const adverse = setAside.filter((c) => c.role === role);
    return {
      score: 0,
      evidence: [
        adverse.length > 0
          ? `No supportive ${roleName} among the stakeholders (${adverse.map((c) => c.name).join(', ')}: negative)`
          : `No ${roleName} among the stakeholders`,
      ],
    };
  }
  // The strongest of them carries the pillar.
  let best = { score: -1, evidence: [] as string[] };
  for (const c of people) {
    let score = 4;
    const e = [`${roleName[0]?.toUpperCase()}${roleName.slice(1)}: ${who(c)}`];
    const lastCall = met.get(c.id);
    if (engagedLevel(c)) {
      score += 3;
      e.push(`engagement ${c.engagement}`);
    } else e.push(`engagement ${c.engagement ?? 'not recorded'}`);
    // A part in a logged call or meeting is engagement too (cited by the activity's id).
    if (lastCall) {
      if (!engagedLevel(c)) score += 3;
      e.push(`took part in ${citeLogged(lastCall)}`);
    }
    if (c.sentiment === 'positive') {
      score += 2;
      e.push('sentiment positive');
    } else if (c.sentiment === 'negative') {
      score -= 3;
      e.push('sentiment negative');
    }
    if (c.influence === 'high') {
      score += 1;
      e.push('high influence');
    }
    if (score > best.score) best = { score, evidence: [e.join(', ')] };
  }
  return { score: clamp(best.score), evidence: best.evidence };
}

/** Pillars that count only support for the deal: competition is a risk, read from the notes on its own. */
export const SUPPORT_PILLARS = PILLARS.filter((p) => p !== 'competition');

/**
 * Scores each pillar 0..10 from what the data shows: stakeholder roles, engagement, sentiment and
 * influence, activity recency and kind, value, close date, stage and notes. Deterministic: the same
 * snapshot always gives the same scores and evidence.
 *
 * With `supportOnly`, the seven support pillars (all but competition) of the deal's supportive view
 * (see supportView): negative and blocking stakeholders and sentences of bad news give no points, and the
 * evidence says what was set aside. The win model reads these, so bad news only ever counts as a risk.
 */
export function scorePillars(s: DealSnapshot, options: { supportOnly?: boolean } = {}): PillarScore[] {
  return options.supportOnly ? supportPillars(supportView(s)) : pillarsOf(s, null);
}

/** The seven support pillars of a supportive view (see supportView). */
export const supportPillars = (view: ReturnType<typeof supportView>): PillarScore[] =>
  pillarsOf(view.snapshot, view.setAside).filter((p) => p.pillar !== 'competition');

type Kind = 'gave' | 'lacks' | 'took';

function pillarsOf(s: DealSnapshot, setAside: SetAside | null): PillarScore[] {
  const text = dealText(s);
  const asideText = setAside?.sentences.join('\n') ?? '';
  const byRole = (role: string) => s.contacts.filter((c) => c.role === role);
  const met = lastMet(s);
  const engaged = (c: ContactFacts) => engagedLevel(c) || met.has(c.id);
  const out: PillarScore[] = [];
  const push = (
    pillar: Pillar,
    score: number,
    evidence: Array<[Kind, string] | null>,
    gap: string | null,
  ) => {
    const items = evidence.filter((e): e is [Kind, string] => e !== null);
    out.push({
      pillar,
      score: clamp(score),
      evidence: items.map(([, e]) => e),
      gap: clamp(score) >= PILLAR_MAX ? null : gap,
      points: items.filter(([k]) => k === 'gave').map(([, e]) => e),
      lacking: items.filter(([k]) => k !== 'gave').map(([, e]) => e),
    });
  };
  const role = (r: { score: number; evidence: string[] }): Array<[Kind, string]> =>
    r.evidence.map((e) => [r.score > 0 ? 'gave' : 'lacks', e]);
  /** Written evidence: the notes (citing the logged activities that carry it), or a custom field hinted at the pillar. */
  const notes = (kind: EvidenceKind, label: string, pillar?: Pillar): [Kind, string] | null => {
    const fields = pillar ? hintedFields(s, pillar).map((f) => f.text) : [];
    if (!evidences(text, kind))
      return fields.length > 0 ? ['gave', `Custom field ${fields.join('; ')}`] : null;
    const ids = writtenLogged(s)
      .filter((a) => evidences(loggedText(a), kind))
      .map(citeLogged);
    const cited = ids.length > 0 ? ` (${ids.slice(0, 3).join('; ')}${ids.length > 3 ? '; …' : ''})` : '';
    return [
      'gave',
      `Notes mention ${label}${cited}${fields.length > 0 ? `; custom field ${fields.join('; ')}` : ''}`,
    ];
  };
  /** Hinted custom fields of a pillar whose points come from people (the buyer, the champion): +2, cited. */
  const hinted = (pillar: Pillar): { points: number; evidence: Array<[Kind, string]> } => {
    const fields = hintedFields(s, pillar);
    return fields.length === 0
      ? { points: 0, evidence: [] }
      : { points: 2, evidence: [['gave', `Custom field ${fields.map((f) => f.text).join('; ')}`]] };
  };
  /** What the notes lack, said so that it stays true when sentences of bad news were set aside. */
  const missing = (kind: EvidenceKind, sentence: string): [Kind, string] =>
    evidences(asideText, kind)
      ? ['lacks', `${sentence} apart from sentences voicing concerns or competition`]
      : ['lacks', sentence];

  // Metrics: a quantified deal and a measurable outcome written down.
  {
    const e: Array<[Kind, string] | null> = [];
    let score = 0;
    if (s.deal.value && s.deal.value > 0) {
      score += 5;
      e.push(['gave', `Deal value ${s.deal.value.toLocaleString('en-US')} ${s.deal.currency ?? ''}`.trim()]);
    } else e.push(['lacks', 'No deal value recorded']);
    const m = notes('metrics', 'measurable outcomes (ROI, savings, KPIs)', 'metrics');
    if (m) score += 5;
    e.push(m ?? missing('metrics', 'No measurable outcome in the notes'));
    push('metrics', score, e, 'Write down the measurable outcome the customer expects (ROI, savings, KPI)');
  }

  // Economic buyer: the person who signs off on the money; an executive sponsor stands in at half weight.
  {
    const eb = rolePillar(byRole('economic_buyer'), 'economic buyer', met, setAside?.contacts);
    let { score } = eb;
    const evidence = role(eb);
    if (byRole('economic_buyer').length === 0) {
      const sponsor = rolePillar(byRole('executive_sponsor'), 'executive sponsor', met);
      if (sponsor.score > 0) {
        score = Math.floor(sponsor.score / 2);
        evidence.push(...role(sponsor), ['gave', 'An executive sponsor counts for half an economic buyer']);
      }
    }
    const field = hinted('economic_buyer');
    score += field.points;
    evidence.push(...field.evidence);
    push(
      'economic_buyer',
      score,
      evidence,
      'Identify the economic buyer and get them engaged and supportive',
    );
  }

  // Decision criteria: a technical evaluator, and criteria written down.
  {
    const tech = rolePillar(byRole('technical_buyer'), 'technical buyer', met, setAside?.contacts);
    let score = Math.round(tech.score * 0.6);
    const e: Array<[Kind, string] | null> = role(tech);
    const n = notes('criteria', 'evaluation criteria or requirements', 'decision_criteria');
    if (n) score += 3;
    e.push(n ?? missing('criteria', 'No evaluation criteria in the notes'));
    if (byRole('end_user').some(engaged)) {
      score += 1;
      e.push(['gave', 'End users are engaged']);
    }
    push('decision_criteria', score, e, 'Agree on the written decision criteria with the technical buyer');
  }

  // Decision process: a close date ahead, progress through the stages, several people mapped.
  {
    const e: Array<[Kind, string] | null> = [];
    let score = 0;
    const close = s.deal.expectedCloseDate;
    if (close && close.getTime() >= s.asOf.getTime()) {
      score += 3;
      e.push(['gave', `Expected close ${close.toISOString().slice(0, 10)}`]);
    } else if (close) e.push(['lacks', `Expected close date ${close.toISOString().slice(0, 10)} has passed`]);
    else e.push(['lacks', 'No expected close date']);
    const openStages = s.stages.filter((x) => x.type === 'open');
    const firstOpen = openStages[0];
    if (firstOpen && s.stage.position > firstOpen.position) {
      score += 2;
      e.push(['gave', `Past the first stage (now ${s.stage.name})`]);
    }
    if (s.stageMoves.forward > 0) {
      score += 1;
      e.push(['gave', `Moved forward ${s.stageMoves.forward} stage${s.stageMoves.forward > 1 ? 's' : ''}`]);
    }
    if (s.contacts.length >= 3) {
      score += 2;
      e.push(['gave', `${s.contacts.length} ${setAside ? 'supportive ' : ''}stakeholders mapped`]);
    }
    const n = notes('process', 'the decision process (timeline, approvals)', 'decision_process');
    if (n) score += 2;
    e.push(n);
    push('decision_process', score, e, 'Map the decision process: who approves, in what order, by when');
  }

  // Paper process: how far the deal is towards contract, and whether legal or procurement is involved.
  {
    const e: Array<[Kind, string] | null> = [];
    let score = 0;
    const p = s.stage.probability ?? 0;
    if (p >= 50) {
      score += 3;
      e.push(['gave', `Stage ${s.stage.name} (${p}%)`]);
    }
    if (p >= 75) score += 2;
    const n = notes('paper', 'contract, legal or procurement steps', 'paper_process');
    if (n) score += 3;
    e.push(n);
    const paperPeople = s.contacts.filter((c) =>
      /legal|procure|purchas|counsel|contract/i.test(c.title ?? ''),
    );
    if (paperPeople.length > 0) {
      score += 2;
      e.push(['gave', `Legal or procurement involved: ${paperPeople.map(who).join(', ')}`]);
    }
    if (score === 0) e.push(['lacks', 'No contract, legal or procurement step recorded']);
    push('paper_process', score, e, 'Learn the paper process: legal review, procurement, signatures');
  }

  // Identified pain: written down, or at least carried by an engaged champion.
  {
    const e: Array<[Kind, string] | null> = [];
    let score = 0;
    const n = notes('pain', 'the customer’s pain', 'identified_pain');
    if (n) score += 6;
    e.push(n);
    const champions = byRole('champion').filter(engaged);
    if (champions.length > 0) {
      score += 2;
      e.push(['gave', 'An engaged champion carries the pain internally']);
    }
    if (s.contacts.some((c) => c.sentiment === 'positive')) {
      score += 2;
      e.push(['gave', 'Stakeholders are positive']);
    }
    if (!n) e.push(missing('pain', 'No pain written in the notes'));
    push('identified_pain', score, e, 'Write down the business pain in the customer’s own words');
  }

  // Champion: someone inside who sells for us.
  {
    const c = rolePillar(byRole('champion'), 'champion', met, setAside?.contacts);
    const field = hinted('champion');
    push(
      'champion',
      c.score + field.points,
      [...role(c), ...field.evidence],
      'Find a champion with influence and keep them engaged',
    );
  }

  // Competition: known competition with a supportive inside voice scores; unknown competition is a blind spot.
  {
    const e: Array<[Kind, string] | null> = [];
    const signals = textSignals(s);
    const fields = hintedFields(s, 'competition');
    let score: number;
    if (fields.length > 0 && signals.competitor === 0) {
      score = 5;
      e.push(['gave', `Competition recorded in custom field ${fields.map((f) => f.text).join('; ')}`]);
    } else if (signals.competitor > 0) {
      score = 5;
      e.push([
        'gave',
        `Competition recorded (${signals.competitor} mention${signals.competitor > 1 ? 's' : ''})`,
      ]);
      if (byRole('champion').some((c) => engaged(c) && c.sentiment === 'positive')) {
        score += 3;
        e.push(['gave', 'A positive champion helps against it']);
      }
    } else {
      score = 4;
      e.push(['lacks', 'No competitor recorded']);
    }
    const blockers = byRole('blocker');
    if (blockers.length > 0) {
      score -= 3;
      e.push(['took', `Blocker: ${blockers.map(who).join(', ')}`]);
    }
    push('competition', score, e, 'Record who else is being evaluated and why we win against them');
  }
  return out;
}

/** When something last happened with the customer at the snapshot: an activity, a logged one, a task done. */
export function lastActivityAt(s: DealSnapshot): Date {
  let last = s.activities.at(-1)?.at ?? s.deal.createdAt;
  for (const a of s.logged) {
    const at = a.type === 'task' ? (a.status === 'done' ? a.completedAt : null) : a.at;
    if (at && at > last && at.getTime() <= s.asOf.getTime()) last = at;
  }
  return last;
}

/** Days since the last customer-facing activity (or creation) at the snapshot. */
export function idleDays(s: DealSnapshot): number {
  return Math.max(0, daysBetween(lastActivityAt(s), s.asOf));
}
