/**
 * Reads explanation sentences against the deal's own data. Each sentence is split into clauses, every
 * clause must match a known wording, and what it claims (a name, a role, a count, a date, a quote) must
 * hold for the deal. Facts are read here from the raw snapshot and the lexicon, not from the explainer.
 */
import { supportView } from '../src/analysis/pillars.ts';
import { activityText, type ContactFacts, type DealSnapshot } from '../src/history.ts';
import { type EvidenceKind, evidences, mentions, type SignalKind } from '../src/lexicon.ts';
import type { FeatureContext } from '../src/prediction/features.ts';

const DAY = 86_400_000;
const texts = (s: DealSnapshot) =>
  [s.deal.notes ?? '', ...s.contacts.map((c) => c.notes ?? ''), ...s.activities.map(activityText)].filter(
    Boolean,
  );
const withSignal = (s: DealSnapshot, kind: SignalKind) => texts(s).filter((t) => mentions(t, kind));
const adverse = (c: ContactFacts) => c.role === 'blocker' || c.sentiment === 'negative';
const engaged = (c: ContactFacts) => c.engagement === 'high' || c.engagement === 'medium';
const role = (c: ContactFacts) => c.role.replaceAll('_', ' ');
const num = (v: string) => Number(v.replaceAll(',', ''));
const lastActivity = (s: DealSnapshot) => s.activities.at(-1)?.at ?? s.deal.createdAt;
const idleOf = (s: DealSnapshot) =>
  Math.floor(Math.max(0, s.asOf.getTime() - lastActivity(s).getTime()) / DAY);
const sameSet = (a: string[], b: string[]) =>
  a.length === b.length && [...a].sort().join('|') === [...b].sort().join('|');

/** "A (champion), B (end user)" -> [[A, champion], [B, end user]] */
function people(list: string): Array<[string, string]> {
  return [...list.matchAll(/([^,(]+?) \(([^)]+)\)(?:, |$)/g)].map((m) => [m[1] as string, m[2] as string]);
}

/** A quoted sentence must be (the start of) a sentence of some text carrying the signal. */
function quoted(s: DealSnapshot, kind: SignalKind, quote: string): boolean {
  const body = quote.replace(/^“|”$/g, '').replace(/…$/, '');
  return withSignal(s, kind).some((t) => t.includes(body) && mentions(body, kind));
}

type Check = (m: RegExpMatchArray) => boolean;
type Rule = [RegExp, Check];

/** The wordings of the pillar evidence, each with the fact it states. */
function evidenceRules(s: DealSnapshot, support: DealSnapshot, supportOnly: boolean): Rule[] {
  const contacts = supportOnly ? support.contacts : s.contacts;
  const text = texts(supportOnly ? support : s).join('\n');
  const allText = texts(s).join('\n');
  const notes =
    (kind: EvidenceKind): Check =>
    () =>
      evidences(text, kind);
  const lacks =
    (kind: EvidenceKind): Check =>
    (m) =>
      !evidences(text, kind) && (m[1] ? evidences(allText, kind) : true);
  const roleLine: Check = (m) => {
    const r = (m[1] as string).toLowerCase().replaceAll(' ', '_');
    const [name, ...rest] = (m[2] as string).split(', ');
    return contacts.some((c) => {
      if (c.role !== r || !(name === c.name || name === `${c.name} (${c.title})`)) return false;
      const engagement = rest.find((x) => x.startsWith('engagement '))?.slice('engagement '.length);
      if (engagement !== (c.engagement ?? 'not recorded')) return false;
      if (rest.includes('sentiment positive') !== (c.sentiment === 'positive')) return false;
      if (rest.includes('sentiment negative') !== (c.sentiment === 'negative')) return false;
      return rest.includes('high influence') === (c.influence === 'high');
    });
  };
  const noRole: Check = (m) => {
    const r = (m[2] as string).replaceAll(' ', '_');
    if (contacts.some((c) => c.role === r)) return false;
    if (!m[1]) return !s.contacts.some((c) => c.role === r);
    const named = (m[3] as string).split(', ');
    return sameSet(
      named,
      s.contacts.filter((c) => c.role === r && c.sentiment === 'negative').map((c) => c.name),
    );
  };
  const close = s.deal.expectedCloseDate;
  const day = (d: Date) => d.toISOString().slice(0, 10);
  return [
    [/^Deal value ([\d,]+)(?: (\w+))?$/, (m) => s.deal.value === num(m[1] as string)],
    [/^No deal value recorded$/, () => !s.deal.value],
    [/^Notes mention measurable outcomes \(ROI, savings, KPIs\)$/, notes('metrics')],
    [
      /^No measurable outcome in the notes( apart from sentences voicing concerns or competition)?$/,
      lacks('metrics'),
    ],
    [/^Notes mention evaluation criteria or requirements$/, notes('criteria')],
    [
      /^No evaluation criteria in the notes( apart from sentences voicing concerns or competition)?$/,
      lacks('criteria'),
    ],
    [/^Notes mention the decision process \(timeline, approvals\)$/, notes('process')],
    [/^Notes mention contract, legal or procurement steps$/, notes('paper')],
    [/^Notes mention the customer’s pain$/, notes('pain')],
    [/^No pain written in the notes( apart from sentences voicing concerns or competition)?$/, lacks('pain')],
    [/^(Economic buyer|Champion|Technical buyer|Executive sponsor): (.+)$/, roleLine],
    [
      /^No (supportive )?(economic buyer|champion|technical buyer|executive sponsor) among the stakeholders(?: \((.+): negative\))?$/,
      noRole,
    ],
    [
      /^Executive sponsor also involved: (.+)$/,
      (m) =>
        (m[1] as string)
          .split(', ')
          .every((n) => contacts.some((c) => c.role === 'executive_sponsor' && c.name === n)),
    ],
    [
      /^An executive sponsor counts for half an economic buyer$/,
      () => !contacts.some((c) => c.role === 'economic_buyer'),
    ],
    [/^End users are engaged$/, () => contacts.some((c) => c.role === 'end_user' && engaged(c))],
    [/^Expected close (\d{4}-\d\d-\d\d)$/, (m) => !!close && day(close) === m[1] && close >= s.asOf],
    [
      /^Expected close date (\d{4}-\d\d-\d\d) has passed$/,
      (m) => !!close && day(close) === m[1] && close < s.asOf,
    ],
    [/^No expected close date$/, () => !close],
    [
      /^Past the first stage \(now (.+)\)$/,
      (m) =>
        s.stage.name === m[1] && s.stage.position > (s.stages.find((x) => x.type === 'open')?.position ?? 1),
    ],
    [/^Moved forward (\d+) stages?$/, (m) => s.stageMoves.forward === Number(m[1])],
    [
      /^(\d+) (supportive )?stakeholders mapped$/,
      (m) => contacts.length === Number(m[1]) && !!m[2] === supportOnly,
    ],
    [/^Stage (.+) \((\d+)%\)$/, (m) => s.stage.name === m[1] && s.stage.probability === Number(m[2])],
    [
      /^Legal or procurement involved: (.+)$/,
      (m) =>
        (m[1] as string)
          .split(', ')
          .every((n) =>
            contacts.some(
              (c) => n.startsWith(c.name) && /legal|procure|purchas|counsel|contract/i.test(c.title ?? ''),
            ),
          ),
    ],
    [
      /^No contract, legal or procurement step recorded$/,
      () => !evidences(text, 'paper') && (s.stage.probability ?? 0) < 50,
    ],
    [
      /^An engaged champion carries the pain internally$/,
      () => contacts.some((c) => c.role === 'champion' && engaged(c)),
    ],
    [/^Stakeholders are positive$/, () => contacts.some((c) => c.sentiment === 'positive')],
  ];
}

export interface FactorToCheck {
  factor: string;
  description: string;
  impact: string;
  /** Where it was listed. */
  side: 'positive' | 'risk' | 'any';
  log_odds?: number;
}

const PILLAR_LABELS = [
  'Metrics',
  'Economic buyer',
  'Decision criteria',
  'Decision process',
  'Paper process',
  'Identified pain',
  'Champion',
];

/** Problems with one prediction factor (empty when it is true of the deal and points the right way). */
export function checkPredictionFactor(
  s: DealSnapshot,
  context: FeatureContext,
  f: FactorToCheck,
  supportScores: Map<string, number>,
): string[] {
  const problems: string[] = [];
  const suffix = f.description.match(
    / \(([+-]\d+\.\d\d) log-odds, (model fitted on \d+ closed deals|stage-and-pillars prior)\)$/,
  );
  if (!suffix) return [`no log-odds suffix: ${f.description}`];
  const logOdds = Number(suffix[1]);
  const a = Math.abs(logOdds);
  // The description rounds to two decimals: at a band's edge either band is right.
  const bands: string[] = [a - 0.005, a + 0.005].map((x) =>
    x >= 0.5 ? 'high' : x >= 0.2 ? 'medium' : 'low',
  );
  if (!bands.includes(f.impact)) problems.push(`impact ${f.impact} for ${logOdds}`);
  if (f.side === 'positive' && logOdds <= 0) problems.push(`positive indicator with ${logOdds}`);
  if (f.side === 'risk' && logOdds >= 0) problems.push(`risk factor with ${logOdds}`);
  const claim = f.description.slice(0, suffix.index);
  const support = supportView(s).snapshot;
  const sign = Math.sign(logOdds);
  /** A claim of lacking support or of having bad news lowers the odds; the opposite raises them. */
  const must = (direction: number) =>
    sign !== 0 && sign !== direction ? [`“${claim}” points the wrong way (${logOdds})`] : [];

  const pillar = PILLAR_LABELS.find((l) => claim.startsWith(`${l} `) && f.factor === l);
  if (pillar) {
    const m = claim.match(/^.+? (\d+)\/10: (.+)$/);
    if (!m) return [...problems, `pillar wording: ${claim}`];
    const score = Number(m[1]);
    if (supportScores.get(pillar) !== score)
      problems.push(`${pillar} says ${score}, support score ${supportScores.get(pillar)}`);
    if (score === 0 && logOdds > 0) problems.push(`${pillar} at 0/10 raises the odds`);
    const rules = evidenceRules(s, support, true);
    for (const clause of (m[2] as string).split('; ')) {
      const rule = rules.find(([re]) => re.test(clause));
      if (!rule) problems.push(`unknown evidence: ${clause}`);
      else if (!rule[1](clause.match(rule[0]) as RegExpMatchArray))
        problems.push(`untrue evidence: ${clause}`);
    }
    return problems;
  }

  const adverseCount = s.contacts.filter(adverse).length;
  const close = s.deal.expectedCloseDate;
  const value = s.deal.value ?? 0;
  const rules: Array<[string, RegExp, Check, number]> = [
    [
      'Stage probability',
      /^Stage (.+) \((\d+|no)% stage probability\)$/,
      (m) => s.stage.name === m[1] && String(s.stage.probability ?? 'no') === m[2],
      0,
    ],
    [
      'Stakeholders mapped',
      /^(?:No stakeholders mapped|(\d+) stakeholders? mapped)(?:, not counting (\d+) negative or blocking ones?)?$/,
      (m) => support.contacts.length === Number(m[1] ?? 0) && adverseCount === Number(m[2] ?? 0),
      0,
    ],
    [
      'Engaged stakeholders',
      /^No engaged stakeholder \(high or medium engagement\)$/,
      () => !s.contacts.some(engaged),
      -1,
    ],
    [
      'Engaged stakeholders',
      /^No engaged stakeholder apart from negative or blocking ones$/,
      () => !support.contacts.some(engaged) && s.contacts.some((c) => adverse(c) && engaged(c)),
      -1,
    ],
    [
      'Engaged stakeholders',
      /^(\d+) engaged stakeholders?: (.+)$/,
      (m) =>
        sameSet(
          people(m[2] as string).map(([n, r]) => `${n}|${r}`),
          s.contacts.filter((c) => !adverse(c) && engaged(c)).map((c) => `${c.name}|${role(c)}`),
        ) && Number(m[1]) === people(m[2] as string).length,
      0,
    ],
    [
      'Positive stakeholders',
      /^No stakeholder with positive sentiment$/,
      () => !s.contacts.some((c) => c.sentiment === 'positive'),
      -1,
    ],
    [
      'Positive stakeholders',
      /^No stakeholder with positive sentiment apart from blockers$/,
      () => s.contacts.filter((c) => c.sentiment === 'positive').every((c) => c.role === 'blocker'),
      -1,
    ],
    [
      'Positive stakeholders',
      /^Positive sentiment: (.+)$/,
      (m) =>
        sameSet(
          people(m[1] as string).map(([n, r]) => `${n}|${r}`),
          s.contacts
            .filter((c) => c.sentiment === 'positive' && c.role !== 'blocker')
            .map((c) => `${c.name}|${role(c)}`),
        ),
      0,
    ],
    ['Positive notes', /^No positive words in the notes$/, () => withSignal(s, 'positive').length === 0, -1],
    [
      'Positive notes',
      /^No positive words in the notes except alongside bad news$/,
      () => withSignal(support, 'positive').length === 0 && withSignal(s, 'positive').length > 0,
      -1,
    ],
    [
      'Positive notes',
      /^Positive words in (\d+) notes?( \(others only alongside bad news\))?: (“.+”)$/,
      (m) =>
        withSignal(support, 'positive').length === Number(m[1]) &&
        withSignal(s, 'positive').length > Number(m[1]) === !!m[2] &&
        quoted(support, 'positive', m[3] as string),
      0,
    ],
    [
      'Activity volume',
      /^(?:No activities recorded|(\d+) activit(?:y|ies) recorded)(?:, not counting (\d+) entr(?:y|ies) that only record bad news)?$/,
      (m) =>
        Number(m[1] ?? 0) + Number(m[2] ?? 0) === s.activities.length &&
        Number(m[1] ?? 0) === support.activities.length,
      0,
    ],
    [
      'Days since last activity',
      /^Last activity (\d+) days? ago$/,
      (m) => idleOf(s) === Number(m[1]) && idleOf(support) === Number(m[1]),
      0,
    ],
    [
      'Days since last activity',
      /^Last activity that is not only bad news (\d+) days? ago \(any activity (\d+) days? ago\)$/,
      (m) => idleOf(support) === Number(m[1]) && idleOf(s) === Number(m[2]),
      0,
    ],
    [
      'Deal age',
      /^Open for (\d+) days?$/,
      (m) => Math.floor((s.asOf.getTime() - s.deal.createdAt.getTime()) / DAY) === Number(m[1]),
      0,
    ],
    ['Stage moves back', /^Never moved back a stage$/, () => s.stageMoves.back === 0, 1],
    ['Stage moves back', /^Moved back (\d+) stages?$/, (m) => s.stageMoves.back === Number(m[1]), -1],
    ['Deal value', /^No deal value recorded$/, () => value <= 0, 0],
    [
      'Deal value',
      /^Deal value ([\d,]+)(?: \w+)?$/,
      (m) => value === num(m[1] as string) && !context.typicalValue,
      0,
    ],
    [
      'Deal value',
      /^Deal value ([\d,]+)(?: \w+)? is ([\d.]+)x the typical deal \(([\d,]+)\)$/,
      (m) => {
        const typical = context.typicalValue ?? 0;
        const ratio = value / typical;
        return (
          Math.abs(value - num(m[1] as string)) < 1 &&
          Math.abs(typical - num(m[3] as string)) < 1 &&
          Math.abs(ratio - Number(m[2])) <= 0.051 * Math.max(1, ratio)
        );
      },
      0,
    ],
    ['Lead source', /^No lead source recorded$/, () => !s.deal.leadSource, 0],
    [
      'Lead source',
      /^Lead source (.+?)( \(too rare in the history to learn from\))?$/,
      (m) => s.deal.leadSource === m[1] && context.leadSources.includes(m[1] as string) === !m[2],
      0,
    ],
    ['Expected close date', /^No expected close date$/, () => !close, 0],
    [
      'Expected close date',
      /^Expected close date (\d{4}-\d\d-\d\d) passed (\d+) days? ago$/,
      (m) =>
        !!close &&
        close < s.asOf &&
        close.toISOString().startsWith(m[1] as string) &&
        Math.floor((s.asOf.getTime() - close.getTime()) / DAY) === Number(m[2]),
      0,
    ],
    [
      'Expected close date',
      /^Expected close date (\d{4}-\d\d-\d\d), in (\d+) days?$/,
      (m) =>
        !!close &&
        close >= s.asOf &&
        close.toISOString().startsWith(m[1] as string) &&
        Math.floor((close.getTime() - s.asOf.getTime()) / DAY) === Number(m[2]),
      0,
    ],
    [
      'Competitor',
      /^No competitor mentioned in the notes$/,
      () => withSignal(s, 'competitor').length === 0,
      1,
    ],
    [
      'Competitor',
      /^Competitor mentioned in (\d+) notes?: (“.+”)$/,
      (m) => withSignal(s, 'competitor').length === Number(m[1]) && quoted(s, 'competitor', m[2] as string),
      -1,
    ],
    [
      'Blockers',
      /^No blocker among the stakeholders$/,
      () => !s.contacts.some((c) => c.role === 'blocker'),
      1,
    ],
    [
      'Blockers',
      /^Blockers?: (.+)$/,
      (m) =>
        s.contacts.filter((c) => c.role === 'blocker').every((c) => (m[1] as string).includes(c.name)) &&
        s.contacts.some((c) => c.role === 'blocker'),
      -1,
    ],
    [
      'Negative stakeholders',
      /^No stakeholder with negative sentiment$/,
      () => !s.contacts.some((c) => c.sentiment === 'negative'),
      1,
    ],
    [
      'Negative stakeholders',
      /^Negative sentiment: (.+)$/,
      (m) =>
        sameSet(
          people(m[1] as string).map(([n, r]) => `${n}|${r}`),
          s.contacts.filter((c) => c.sentiment === 'negative').map((c) => `${c.name}|${role(c)}`),
        ),
      -1,
    ],
    [
      'Concerns in notes',
      /^No concerns or setbacks in the notes$/,
      () => withSignal(s, 'negative').length === 0,
      1,
    ],
    [
      'Concerns in notes',
      /^Concerns or setbacks in (\d+) notes?: (“.+”)$/,
      (m) => withSignal(s, 'negative').length === Number(m[1]) && quoted(s, 'negative', m[2] as string),
      -1,
    ],
    // Logged activities: none in these generated histories, so the graph factors can only say so.
    [
      'Calls and meetings',
      /^No call or meeting logged$/,
      () => !s.logged.some((a) => a.type === 'call' || a.type === 'meeting'),
      -1,
    ],
    ['Overdue tasks', /^No overdue task$/, () => !s.logged.some((a) => a.type === 'task'), 1],
    ['Close date pushed', /^Close date never pushed$/, () => s.fieldFacts.pushes.length === 0, 1],
    [
      'Close date pushed',
      /^Close date pushed (\d+) times? \(expected_close_date .+\)$/,
      (m) => s.fieldFacts.pushes.length === Number(m[1]),
      -1,
    ],
    [
      'Days in the current stage',
      /^Time in the stage not known \(no field history\)$/,
      () => s.fieldFacts.stageSince === null,
      0,
    ],
    [
      'Days in the current stage',
      /^In (.+) for (\d+) days? \(since (\S+)\)(?:, typically [\d.]+ days? here)?$/,
      (m) =>
        m[1] === s.stage.name &&
        s.fieldFacts.stageSince !== null &&
        Math.floor((s.asOf.getTime() - s.fieldFacts.stageSince.getTime()) / DAY) === Number(m[2]),
      0,
    ],
  ];
  const rule = rules.find(([label, re]) => label === f.factor && re.test(claim));
  if (!rule) return [...problems, `unknown wording for ${f.factor}: ${claim}`];
  if (!rule[2](claim.match(rule[1]) as RegExpMatchArray)) problems.push(`untrue: ${claim}`);
  problems.push(...must(rule[3] === 0 ? sign : rule[3]));
  return problems;
}

/** Problems with one of the analysis' risk or win factors. */
export function checkAnalysisFactor(
  s: DealSnapshot,
  factor: string,
  side: 'risk' | 'win',
  staleAfterDays: number,
  pillarScores: Map<string, number>,
): string[] {
  const idle = idleOf(s);
  const exactIdle = Math.max(0, s.asOf.getTime() - lastActivity(s).getTime()) / DAY;
  const close = s.deal.expectedCloseDate;
  const engagedCount = s.contacts.filter(engaged).length;
  const rules: Array<[RegExp, Check, 'risk' | 'win']> = [
    [
      /^No activity for (\d+) days \(stale after (\d+)\)$/,
      (m) => idle === Number(m[1]) && exactIdle > staleAfterDays,
      'risk',
    ],
    [
      /^Active: last activity (\d+) day\(s\) ago$/,
      (m) => idle === Number(m[1]) && exactIdle <= staleAfterDays,
      'win',
    ],
    [
      /^Expected close date passed (\d+) day\(s\) ago$/,
      (m) =>
        !!close && close < s.asOf && Math.floor((s.asOf.getTime() - close.getTime()) / DAY) === Number(m[1]),
      'risk',
    ],
    [/^No expected close date$/, () => !close, 'risk'],
    [
      /^Close date pushed (\d+) times \(expected_close_date (.+)\)$/,
      (m) =>
        s.fieldFacts.pushes.length === Number(m[1]) &&
        Number(m[1]) >= 2 &&
        s.fieldFacts.pushes
          .slice(-3)
          .every((p) =>
            (m[2] as string).includes(
              `${p.to.toISOString().slice(0, 10)} on ${p.at.toISOString().slice(0, 10)}`,
            ),
          ),
      'risk',
    ],
    [
      /^Stuck in (.+) for (\d+) days \(stage_id since (\S+)(?:, event \S+)?; (?:deals here typically spend ([\d.]+) days in it|no typical time known, stuck after 60 days)\)$/,
      (m) => {
        const since = s.fieldFacts.stageSince;
        if (!since || m[1] !== s.stage.name || m[3] !== since.toISOString().slice(0, 10)) return false;
        const days = (s.asOf.getTime() - since.getTime()) / DAY;
        return Math.floor(days) === Number(m[2]) && days > (m[4] ? 2 * Number(m[4]) : 60);
      },
      'risk',
    ],
    [/^No stakeholders recorded$/, () => s.contacts.length === 0, 'risk'],
    [/^Single-threaded: one stakeholder$/, () => s.contacts.length === 1, 'risk'],
    [
      /^Single-threaded: (.+) is the only engaged one of (\d+) stakeholders$/,
      (m) =>
        engagedCount === 1 &&
        s.contacts.length === Number(m[2]) &&
        s.contacts.some((c) => engaged(c) && c.name === m[1]),
      'risk',
    ],
    [
      /^Multi-threaded: (\d+) of (\d+) stakeholders engaged$/,
      (m) => engagedCount === Number(m[1]) && s.contacts.length === Number(m[2]),
      'win',
    ],
    [
      /^Blocker involved: (.+)$/,
      (m) =>
        s.contacts.some(
          (c) => c.role === 'blocker' && (m[1] === c.name || m[1] === `${c.name} (${c.title})`),
        ),
      'risk',
    ],
    [
      /^(.+) \(([a-z ]+)\) is negative$/,
      (m) => s.contacts.some((c) => c.name === m[1] && role(c) === m[2] && c.sentiment === 'negative'),
      'risk',
    ],
    [
      /^Competition mentioned in (\d+) notes?: (“.+”)$/,
      (m) => withSignal(s, 'competitor').length === Number(m[1]) && quoted(s, 'competitor', m[2] as string),
      'risk',
    ],
    [
      /^Concerns or setbacks in (\d+) notes?: (“.+”)$/,
      (m) => withSignal(s, 'negative').length === Number(m[1]) && quoted(s, 'negative', m[2] as string),
      'risk',
    ],
    [
      /^Positive words in (\d+) notes?: (“.+”)$/,
      (m) => withSignal(s, 'positive').length === Number(m[1]) && quoted(s, 'positive', m[2] as string),
      'win',
    ],
    [/^Moved forward (\d+) stage\(s\)$/, (m) => s.stageMoves.forward === Number(m[1]), 'win'],
    [/^Moved back (\d+) stage\(s\)$/, (m) => s.stageMoves.back === Number(m[1]), 'risk'],
  ];
  const pillar = factor.match(/^(.+) (strong|weak) \((\d+)\/10\): (.+)$/);
  if (pillar) {
    const [, label, kind, score, evidence] = pillar as unknown as [string, string, string, string, string];
    const problems: string[] = [];
    if (label === 'Competition') problems.push('competition listed as a pillar strength or gap');
    if (pillarScores.get(label) !== Number(score))
      problems.push(`${label} says ${score}, scored ${pillarScores.get(label)}`);
    if ((kind === 'strong') !== (side === 'win')) problems.push(`${kind} pillar listed as ${side}`);
    if (kind === 'strong' ? Number(score) < 8 : Number(score) > 3) problems.push(`${kind} at ${score}/10`);
    const evidenceRulesAll = evidenceRules(s, s, false);
    for (const clause of evidence.split('; ')) {
      const rule = evidenceRulesAll.find(([re]) => re.test(clause));
      if (!rule) problems.push(`unknown evidence: ${clause}`);
      else if (!rule[1](clause.match(rule[0]) as RegExpMatchArray))
        problems.push(`untrue evidence: ${clause}`);
      if (kind === 'strong' && /^No /.test(clause))
        problems.push(`a strength names what is missing: ${clause}`);
    }
    return problems;
  }
  const rule = rules.find(([re]) => re.test(factor));
  if (!rule) return [`unknown wording: ${factor}`];
  const problems: string[] = [];
  if (!rule[1](factor.match(rule[0]) as RegExpMatchArray)) problems.push(`untrue: ${factor}`);
  if (rule[2] !== side) problems.push(`listed as ${side}: ${factor}`);
  return problems;
}
