import { activityText, type ContactFacts, type DealSnapshot, daysBetween } from '../history.ts';
import { type EvidenceKind, evidences, mentions } from '../lexicon.ts';

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
}

const engaged = (c: ContactFacts) => c.engagement === 'high' || c.engagement === 'medium';
const who = (c: ContactFacts) => (c.title ? `${c.name} (${c.title})` : c.name);
const clamp = (v: number) => Math.max(0, Math.min(PILLAR_MAX, v));

/** Everything a person wrote about the deal: its notes, its contacts' notes, their own activity entries. */
export function dealText(s: DealSnapshot): string {
  return [s.deal.notes ?? '', ...s.contacts.map((c) => c.notes ?? ''), ...s.activities.map(activityText)]
    .filter(Boolean)
    .join('\n');
}

/** Free-text signals counted per piece of text (a note or an entry), so one long note counts once. */
export function textSignals(s: DealSnapshot): { positive: number; negative: number; competitor: number } {
  const texts = [
    s.deal.notes ?? '',
    ...s.contacts.map((c) => c.notes ?? ''),
    ...s.activities.map(activityText),
  ];
  const count = (kind: 'positive' | 'negative' | 'competitor') =>
    texts.filter((t) => mentions(t, kind)).length;
  return { positive: count('positive'), negative: count('negative'), competitor: count('competitor') };
}

/** A stakeholder-led pillar: someone in the role, engaged, supportive, influential. */
function rolePillar(people: ContactFacts[], roleName: string): { score: number; evidence: string[] } {
  const evidence: string[] = [];
  if (people.length === 0) return { score: 0, evidence: [`No ${roleName} among the stakeholders`] };
  // The strongest of them carries the pillar.
  let best = { score: -1, evidence: [] as string[] };
  for (const c of people) {
    let score = 4;
    const e = [`${roleName[0]?.toUpperCase()}${roleName.slice(1)}: ${who(c)}`];
    if (engaged(c)) {
      score += 3;
      e.push(`engagement ${c.engagement}`);
    } else e.push(`engagement ${c.engagement ?? 'not recorded'}`);
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
  evidence.push(...best.evidence);
  return { score: clamp(best.score), evidence };
}

function notesEvidence(text: string, kind: EvidenceKind, label: string): string | null {
  return evidences(text, kind) ? `Notes mention ${label}` : null;
}

/**
 * Scores each pillar 0..10 from what the data shows: stakeholder roles, engagement, sentiment and
 * influence, activity recency and kind, value, close date, stage and notes. Deterministic: the same
 * snapshot always gives the same scores and evidence.
 */
export function scorePillars(s: DealSnapshot): PillarScore[] {
  const text = dealText(s);
  const byRole = (role: string) => s.contacts.filter((c) => c.role === role);
  const out: PillarScore[] = [];
  const push = (pillar: Pillar, score: number, evidence: Array<string | null>, gap: string | null) =>
    out.push({
      pillar,
      score: clamp(score),
      evidence: evidence.filter((e): e is string => Boolean(e)),
      gap: clamp(score) >= PILLAR_MAX ? null : gap,
    });

  // Metrics: a quantified deal and a measurable outcome written down.
  {
    const e: Array<string | null> = [];
    let score = 0;
    if (s.deal.value && s.deal.value > 0) {
      score += 5;
      e.push(`Deal value ${s.deal.value.toLocaleString('en-US')} ${s.deal.currency ?? ''}`.trim());
    } else e.push('No deal value recorded');
    const m = notesEvidence(text, 'metrics', 'measurable outcomes (ROI, savings, KPIs)');
    if (m) score += 5;
    e.push(m);
    push('metrics', score, e, 'Write down the measurable outcome the customer expects (ROI, savings, KPI)');
  }

  // Economic buyer: the person who signs off on the money; an executive sponsor stands in at half weight.
  {
    const eb = rolePillar(byRole('economic_buyer'), 'economic buyer');
    let { score } = eb;
    const evidence = [...eb.evidence];
    if (byRole('economic_buyer').length === 0) {
      const sponsor = rolePillar(byRole('executive_sponsor'), 'executive sponsor');
      if (sponsor.score > 0) {
        score = Math.floor(sponsor.score / 2);
        evidence.push(...sponsor.evidence, 'An executive sponsor counts for half an economic buyer');
      }
    }
    push(
      'economic_buyer',
      score,
      evidence,
      'Identify the economic buyer and get them engaged and supportive',
    );
  }

  // Decision criteria: a technical evaluator, and criteria written down.
  {
    const tech = rolePillar(byRole('technical_buyer'), 'technical buyer');
    let score = Math.round(tech.score * 0.6);
    const e: Array<string | null> = [...tech.evidence];
    const n = notesEvidence(text, 'criteria', 'evaluation criteria or requirements');
    if (n) score += 3;
    e.push(n);
    if (byRole('end_user').some(engaged)) {
      score += 1;
      e.push('End users are engaged');
    }
    push('decision_criteria', score, e, 'Agree on the written decision criteria with the technical buyer');
  }

  // Decision process: a close date ahead, progress through the stages, several people mapped.
  {
    const e: Array<string | null> = [];
    let score = 0;
    const close = s.deal.expectedCloseDate;
    if (close && close.getTime() >= s.asOf.getTime()) {
      score += 3;
      e.push(`Expected close ${close.toISOString().slice(0, 10)}`);
    } else if (close) e.push(`Expected close date ${close.toISOString().slice(0, 10)} has passed`);
    else e.push('No expected close date');
    const openStages = s.stages.filter((x) => x.type === 'open');
    const firstOpen = openStages[0];
    if (firstOpen && s.stage.position > firstOpen.position) {
      score += 2;
      e.push(`Past the first stage (now ${s.stage.name})`);
    }
    if (s.stageMoves.forward > 0) {
      score += 1;
      e.push(`Moved forward ${s.stageMoves.forward} stage${s.stageMoves.forward > 1 ? 's' : ''}`);
    }
    if (s.contacts.length >= 3) {
      score += 2;
      e.push(`${s.contacts.length} stakeholders mapped`);
    }
    const n = notesEvidence(text, 'process', 'the decision process (timeline, approvals)');
    if (n) score += 2;
    e.push(n);
    push('decision_process', score, e, 'Map the decision process: who approves, in what order, by when');
  }

  // Paper process: how far the deal is towards contract, and whether legal or procurement is involved.
  {
    const e: Array<string | null> = [];
    let score = 0;
    const p = s.stage.probability ?? 0;
    if (p >= 50) {
      score += 3;
      e.push(`Stage ${s.stage.name} (${p}%)`);
    }
    if (p >= 75) score += 2;
    const n = notesEvidence(text, 'paper', 'contract, legal or procurement steps');
    if (n) score += 3;
    e.push(n);
    const paperPeople = s.contacts.filter((c) =>
      /legal|procure|purchas|counsel|contract/i.test(c.title ?? ''),
    );
    if (paperPeople.length > 0) {
      score += 2;
      e.push(`Legal or procurement involved: ${paperPeople.map(who).join(', ')}`);
    }
    push('paper_process', score, e, 'Learn the paper process: legal review, procurement, signatures');
  }

  // Identified pain: written down, or at least carried by an engaged champion.
  {
    const e: Array<string | null> = [];
    let score = 0;
    const n = notesEvidence(text, 'pain', 'the customer’s pain');
    if (n) score += 6;
    e.push(n);
    const champions = byRole('champion').filter(engaged);
    if (champions.length > 0) {
      score += 2;
      e.push('An engaged champion carries the pain internally');
    }
    if (s.contacts.some((c) => c.sentiment === 'positive')) {
      score += 2;
      e.push('Stakeholders are positive');
    }
    if (!n) e.push('No pain written in the notes');
    push('identified_pain', score, e, 'Write down the business pain in the customer’s own words');
  }

  // Champion: someone inside who sells for us.
  {
    const c = rolePillar(byRole('champion'), 'champion');
    push('champion', c.score, c.evidence, 'Find a champion with influence and keep them engaged');
  }

  // Competition: known competition with a supportive inside voice scores; unknown competition is a blind spot.
  {
    const e: Array<string | null> = [];
    const signals = textSignals(s);
    let score: number;
    if (signals.competitor > 0) {
      score = 5;
      e.push(`Competition recorded (${signals.competitor} mention${signals.competitor > 1 ? 's' : ''})`);
      if (byRole('champion').some((c) => engaged(c) && c.sentiment === 'positive')) {
        score += 3;
        e.push('A positive champion helps against it');
      }
    } else {
      score = 4;
      e.push('No competitor recorded');
    }
    const blockers = byRole('blocker');
    if (blockers.length > 0) {
      score -= 3;
      e.push(`Blocker: ${blockers.map(who).join(', ')}`);
    }
    push('competition', score, e, 'Record who else is being evaluated and why we win against them');
  }
  return out;
}

/** Days since the last customer-facing activity (or creation) at the snapshot. */
export function idleDays(s: DealSnapshot): number {
  const last = s.activities.at(-1)?.at ?? s.deal.createdAt;
  return Math.max(0, daysBetween(last, s.asOf));
}
