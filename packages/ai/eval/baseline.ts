/**
 * The bar the win model is held to: a plain L2 logistic regression (standardized features, penalty 1, no
 * sign constraints, no pillars) on the deal's raw fields, fitted on the same training snapshots. Written
 * apart from the model's own features, from the fields as the CRM stores them.
 */

import { dealTexts, idleDays } from '../src/analysis/pillars.ts';
import { type DealSnapshot, daysBetween } from '../src/history.ts';
import { evidences, mentions } from '../src/lexicon.ts';
import { fitLogistic, type LogisticModel, predictLogistic } from '../src/prediction/logistic-regression.ts';

const ROLES = [
  'economic_buyer',
  'champion',
  'technical_buyer',
  'end_user',
  'influencer',
  'executive_sponsor',
  'blocker',
];

function rawFields(s: DealSnapshot, leadSources: string[]): number[] {
  const texts = dealTexts(s);
  const all = texts.join('\n');
  const count = (pred: (c: DealSnapshot['contacts'][number]) => boolean) => s.contacts.filter(pred).length;
  const close = s.deal.expectedCloseDate;
  const value = s.deal.value ?? 0;
  return [
    (s.stage.probability ?? 50) / 100,
    value > 0 ? Math.log(value) : 0,
    value > 0 ? 0 : 1,
    ...leadSources.map((l) => (s.deal.leadSource === l ? 1 : 0)),
    ...ROLES.map((role) => count((c) => c.role === role)),
    count((c) => c.engagement === 'high'),
    count((c) => c.engagement === 'medium'),
    count((c) => c.engagement === 'low'),
    count((c) => c.sentiment === 'positive'),
    count((c) => c.sentiment === 'negative'),
    count((c) => c.influence === 'high'),
    texts.filter((t) => mentions(t, 'competitor')).length,
    texts.filter((t) => mentions(t, 'negative')).length,
    texts.filter((t) => mentions(t, 'positive')).length,
    ...(['metrics', 'criteria', 'process', 'paper', 'pain'] as const).map((k) => (evidences(all, k) ? 1 : 0)),
    close ? 1 : 0,
    close ? Math.max(-180, Math.min(365, daysBetween(s.asOf, close))) : 0,
    close && close < s.asOf ? 1 : 0,
    Math.log1p(s.activities.length),
    Math.min(idleDays(s), 120),
    Math.max(0, daysBetween(s.deal.createdAt, s.asOf)),
    s.stageMoves.forward,
    s.stageMoves.back,
  ];
}

export interface PlainRegression {
  model: LogisticModel;
  leadSources: string[];
}

export function fitPlainRegression(snapshots: DealSnapshot[], y: number[]): PlainRegression {
  const leadSources = [
    ...new Set(snapshots.map((s) => s.deal.leadSource).filter((l): l is string => !!l)),
  ].sort();
  const x = snapshots.map((s) => rawFields(s, leadSources));
  return { model: fitLogistic(x, y, { l2: 1 }), leadSources };
}

export const plainProbability = (m: PlainRegression, s: DealSnapshot) =>
  predictLogistic(m.model, rawFields(s, m.leadSources));
