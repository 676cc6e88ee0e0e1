import type { ColumnType, Generated } from 'kysely';

/** numeric and bigint: the drivers hand them back as strings (they can exceed a JavaScript number). */
type Big = ColumnType<string, string | number, string | number>;

/**
 * What the database keeps itself, by triggers (migrations `…kept_counts`, `…stage_totals`,
 * `…analytics_aggregates`): tables and columns no entity maps, written only by the database, read by the
 * analytics and the lists through the typed builder. Their shapes here follow the migrations.
 */
export interface KeptTables {
  /** Every value a record's field held, from when (migration `…field_history`, written by its trigger). */
  field_history: {
    id: Generated<string>;
    org_id: string;
    record_type: 'deal' | 'contact' | 'company';
    record_id: string;
    field: string;
    value: unknown;
    valid_from: Date;
    actor: Record<string, unknown> | null;
    event_id: string | null;
  };
  /** A unique custom field's values, each claimed by its record (migration `…custom_fields`). */
  custom_unique_values: {
    org_id: string;
    object: string;
    key: string;
    value_hash: Buffer;
    record_id: string;
  };
  /**
   * An indexed custom field's values, a row per record and value in the column its type compares in
   * (migration `…custom_indexed_values`, written by its trigger and by the backfill of a field made indexed).
   */
  custom_indexed_values: {
    org_id: string;
    object: string;
    key: string;
    value_text: string | null;
    value_num: Big | null;
    value_time: Date | null;
    record_id: string;
  };
  deal_counts: {
    org_id: string;
    pipeline_id: string;
    stage_id: string;
    lifecycle_stage: string;
    shard: number;
    n: Big;
    value_sum: Big;
  };
  contact_counts: { org_id: string; shard: number; n: Big };
  company_counts: { org_id: string; shard: number; n: Big };
  activity_signal_hours: {
    org_id: string;
    hour: Date;
    positive: number;
    negative: number;
    competitor: number;
  };
  deal_close_days: {
    org_id: string;
    day: Date;
    won: boolean;
    lead_source: string;
    deals: number;
    cycle_seconds: Big;
    activities: Big;
    economic_buyer_engaged: number;
    champion_engaged: number;
    multi_threaded: number;
    positive_stakeholder: number;
    close_date_set: number;
    competitor_mentioned: number;
    negative_stakeholder: number;
  };
  deal_closes: {
    deal_id: string;
    org_id: string;
    closed_at: Date;
    won: boolean;
    lead_source: string;
    cycle_seconds: Big;
    activities: number;
    economic_buyer_engaged: boolean;
    champion_engaged: boolean;
    multi_threaded: boolean;
    positive_stakeholder: boolean;
    close_date_set: boolean;
    competitor_mentioned: boolean;
    negative_stakeholder: boolean;
  };
  /** A synced record's last change, its place in the sync order, its tombstone (migration `…sync`). */
  sync_changes: {
    org_id: string;
    object: string;
    id: string;
    position: Big | null;
    changed_at: Date;
    deleted_at: Date | null;
  };
  /** Per sequencer pass: the highest sync position placed, when the pass ended. */
  sync_marks: { position: Big; at: Date };
}

/** Columns the triggers keep on tables the entities map (not on the entities: no write goes through them). */
export interface KeptColumns {
  deals: { creation_signals: Generated<number>; negative_stakeholders: Generated<number> };
  activities: { signals: Generated<number> };
}
