import { Migration20261122000000_initial } from './Migration20261122000000_initial.ts';
import { Migration20261123000000_outbox } from './Migration20261123000000_outbox.ts';
import { Migration20261123000100_limits } from './Migration20261123000100_limits.ts';
import { Migration20261123000200_webhooks } from './Migration20261123000200_webhooks.ts';
import { Migration20261123000300_ai } from './Migration20261123000300_ai.ts';
import { Migration20261124000000_admin } from './Migration20261124000000_admin.ts';
import { Migration20261125000000_webhook_worker } from './Migration20261125000000_webhook_worker.ts';
import { Migration20261126000000_scoped_keys_events } from './Migration20261126000000_scoped_keys_events.ts';
import { Migration20261127000000_kept_counts } from './Migration20261127000000_kept_counts.ts';
import { Migration20261128000000_stage_totals } from './Migration20261128000000_stage_totals.ts';
import { Migration20261129000000_analytics_aggregates } from './Migration20261129000000_analytics_aggregates.ts';
import { Migration20261130000000_custom_fields } from './Migration20261130000000_custom_fields.ts';
import { Migration20261130000100_search_scale } from './Migration20261130000100_search_scale.ts';
import { Migration20261130000200_pipelines } from './Migration20261130000200_pipelines.ts';
import { Migration20261201000000_companies } from './Migration20261201000000_companies.ts';
import { Migration20261201000100_stakeholders } from './Migration20261201000100_stakeholders.ts';
import { Migration20261201000200_activities } from './Migration20261201000200_activities.ts';
import { Migration20261201000300_erasures } from './Migration20261201000300_erasures.ts';
import { Migration20261202000000_sync } from './Migration20261202000000_sync.ts';
import { Migration20261202000100_field_history } from './Migration20261202000100_field_history.ts';
import { Migration20261202000200_webhook_filters } from './Migration20261202000200_webhook_filters.ts';
import { Migration20261202000300_search_words } from './Migration20261202000300_search_words.ts';
import { Migration20261202000400_ai_open_tasks } from './Migration20261202000400_ai_open_tasks.ts';
import { Migration20261202000700_list_indexes } from './Migration20261202000700_list_indexes.ts';
import { Migration20261203000100_custom_indexed_values } from './Migration20261203000100_custom_indexed_values.ts';
import { Migration20261203000200_saved_views } from './Migration20261203000200_saved_views.ts';
import { Migration20261204000000_gin_pending_lists } from './Migration20261204000000_gin_pending_lists.ts';
import { Migration20261204000100_search_text } from './Migration20261204000100_search_text.ts';
import { Migration20261205000000_outbox_retention_index } from './Migration20261205000000_outbox_retention_index.ts';

/** Listed explicitly (no folder scan): the same list runs on PGlite and on PostgreSQL. */
export const migrationsList = [
  { name: 'Migration20261122000000_initial', class: Migration20261122000000_initial },
  { name: 'Migration20261123000000_outbox', class: Migration20261123000000_outbox },
  { name: 'Migration20261123000100_limits', class: Migration20261123000100_limits },
  { name: 'Migration20261123000200_webhooks', class: Migration20261123000200_webhooks },
  { name: 'Migration20261123000300_ai', class: Migration20261123000300_ai },
  { name: 'Migration20261124000000_admin', class: Migration20261124000000_admin },
  { name: 'Migration20261125000000_webhook_worker', class: Migration20261125000000_webhook_worker },
  { name: 'Migration20261126000000_scoped_keys_events', class: Migration20261126000000_scoped_keys_events },
  { name: 'Migration20261127000000_kept_counts', class: Migration20261127000000_kept_counts },
  { name: 'Migration20261128000000_stage_totals', class: Migration20261128000000_stage_totals },
  {
    name: 'Migration20261129000000_analytics_aggregates',
    class: Migration20261129000000_analytics_aggregates,
  },
  { name: 'Migration20261130000000_custom_fields', class: Migration20261130000000_custom_fields },
  { name: 'Migration20261130000100_search_scale', class: Migration20261130000100_search_scale },
  { name: 'Migration20261130000200_pipelines', class: Migration20261130000200_pipelines },
  { name: 'Migration20261201000000_companies', class: Migration20261201000000_companies },
  { name: 'Migration20261201000100_stakeholders', class: Migration20261201000100_stakeholders },
  { name: 'Migration20261201000200_activities', class: Migration20261201000200_activities },
  { name: 'Migration20261201000300_erasures', class: Migration20261201000300_erasures },
  { name: 'Migration20261202000000_sync', class: Migration20261202000000_sync },
  { name: 'Migration20261202000100_field_history', class: Migration20261202000100_field_history },
  { name: 'Migration20261202000200_webhook_filters', class: Migration20261202000200_webhook_filters },
  { name: 'Migration20261202000300_search_words', class: Migration20261202000300_search_words },
  { name: 'Migration20261202000400_ai_open_tasks', class: Migration20261202000400_ai_open_tasks },
  { name: 'Migration20261202000700_list_indexes', class: Migration20261202000700_list_indexes },
  {
    name: 'Migration20261203000100_custom_indexed_values',
    class: Migration20261203000100_custom_indexed_values,
  },
  { name: 'Migration20261203000200_saved_views', class: Migration20261203000200_saved_views },
  { name: 'Migration20261204000000_gin_pending_lists', class: Migration20261204000000_gin_pending_lists },
  { name: 'Migration20261204000100_search_text', class: Migration20261204000100_search_text },
  {
    name: 'Migration20261205000000_outbox_retention_index',
    class: Migration20261205000000_outbox_retention_index,
  },
];
