/**
 * Word stems that mark a person's free text (notes, their own activity entries) as a signal. One list,
 * compiled for JavaScript (one deal at a time) and for PostgreSQL (the briefing counts over thousands of
 * activities in SQL), so both read text the same way: a stem matches at the start of a word, any case.
 */
export const SIGNAL_STEMS = {
  positive: [
    'approved',
    'budget approved',
    'green light',
    'excited',
    'great',
    'happy',
    'love',
    'pleased',
    'agreed',
    'signed',
    'verbal yes',
    'committed',
    'interested',
    'impressed',
    'progress',
    'ready to move',
  ],
  negative: [
    'concern',
    'worried',
    'delay',
    'postpone',
    'pushed back',
    'on hold',
    'unhappy',
    'frustrat',
    'cancel',
    'budget cut',
    'no budget',
    'freeze',
    'too expensive',
    'price objection',
    'not interested',
    'went silent',
    'no response',
    'churn',
    'escalat',
    'complain',
  ],
  competitor: [
    'competitor',
    'competition',
    'competing',
    'competitive',
    'rival',
    'incumbent',
    'alternative vendor',
    'also evaluating',
    'evaluating other',
    'shortlist',
    'versus',
    'vs',
    'bake-off',
    'rfp',
  ],
} as const;
export type SignalKind = keyof typeof SIGNAL_STEMS;

/** Stems that mark MEDDPICC evidence in notes. */
export const EVIDENCE_STEMS = {
  metrics: [
    'roi',
    'return on investment',
    'payback',
    'kpi',
    'metric',
    'save',
    'saving',
    'reduce',
    'increase',
    'revenue',
    'cost',
    'hours per',
  ],
  criteria: [
    'requirement',
    'criteria',
    'evaluation',
    'proof of concept',
    'poc',
    'pilot',
    'trial',
    'benchmark',
    'integration',
    'must have',
    'security review',
  ],
  process: [
    'timeline',
    'approval',
    'sign-off',
    'sign off',
    'committee',
    'board',
    'decision',
    'next step',
    'deadline',
    'go-live',
    'go live',
  ],
  paper: [
    'contract',
    'legal',
    'procurement',
    'purchase order',
    'msa',
    'redline',
    'terms',
    'order form',
    'signature',
    'vendor onboarding',
    'security questionnaire',
  ],
  pain: [
    'pain',
    'problem',
    'challenge',
    'struggl',
    'bottleneck',
    'manual',
    'slow',
    'costly',
    'error-prone',
    'outage',
    'downtime',
    'compliance',
    'inefficien',
    'losing',
  ],
} as const;
export type EvidenceKind = keyof typeof EVIDENCE_STEMS;

/** Stems are plain words; `-` needs no escape outside a bracket, in either dialect. */
const escapeStem = (stem: string) => stem.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Compiled once per stem list (keyed by the list itself: these run for every piece of text of every snapshot). */
const jsCache = new Map<readonly string[], RegExp>();
function jsPattern(stems: readonly string[]): RegExp {
  let re = jsCache.get(stems);
  if (!re) {
    re = new RegExp(`(?:^|[^\\p{L}\\p{N}])(?:${stems.map(escapeStem).join('|')})`, 'iu');
    jsCache.set(stems, re);
  }
  return re;
}

/** Whether the text mentions a signal of this kind. */
export const mentions = (text: string, kind: SignalKind): boolean =>
  text.length > 0 && jsPattern(SIGNAL_STEMS[kind]).test(text);

/** Whether the text carries evidence of this kind. */
export const evidences = (text: string, kind: EvidenceKind): boolean =>
  text.length > 0 && jsPattern(EVIDENCE_STEMS[kind]).test(text);

/** The same test as a PostgreSQL regular expression for `~*` (`\m` is the start of a word). */
export function signalRegexSql(kind: SignalKind): string {
  return `\\m(${SIGNAL_STEMS[kind].map(escapeStem).join('|')})`;
}
