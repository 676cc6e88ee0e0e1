export * from './analysis/chain.ts';
export { DEAL_HEALTH, type DealHealth, PUSHES_RISK, SCORE_BANDS, type ScoreBand } from './analysis/model.ts';
export { PILLARS } from './analysis/pillars.ts';
export * from './analysis/schema.ts';
export * from './briefing/chain.ts';
export {
  BRIEFING_LIST_LIMIT,
  type BriefingDealRow,
  type BriefingFacts,
  CLOSING_WITHIN_DAYS,
  type DealAttention,
  type OverdueTask,
  type OverdueTasks,
} from './briefing/model.ts';
export * from './briefing/schema.ts';
export * from './coaching/chain.ts';
export {
  type CoachingAttention,
  type CoachingFacts,
  TRAITS,
  type TraitCount,
  type TraitKey,
} from './coaching/model.ts';
export * from './coaching/schema.ts';
export * from './history.ts';
export { SIGNAL_STEMS, signalRegexSql } from './lexicon.ts';
export { createLanguageModel, MODEL_PAUSE_MS, MODEL_TIMEOUTS_IN_A_ROW } from './narrative/language-model.ts';
export type { NarrativeSource } from './narrative/narrate.ts';
export * from './prediction/chain.ts';
export { fitWinModelOffThread } from './prediction/fit-off-thread.ts';
export {
  type FittedWinModel,
  fitWinModel,
  HISTORY_DAYS,
  HISTORY_MAX_DEALS,
  labelledSnapshotTimes,
  MIN_CLOSED_DEALS,
  MIN_PER_OUTCOME,
  predictSnapshot,
  SNAPSHOT_EVERY_DAYS,
} from './prediction/model.ts';
export * from './prediction/schema.ts';
