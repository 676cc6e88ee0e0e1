import { RECORDED_ACTIVITY_TYPES } from '@crm/ai';

/**
 * SQL for the free text a person wrote in an activity `a` (as `activityText` in @crm/ai reads it): the new
 * notes of a recorded change, else a person's own entry's description. With `dealNotes`, a deal's creation
 * counts that expression too (the notes it was created with are in no change record).
 */
export function activityTextSql(dealNotes?: string): string {
  const recorded = [...RECORDED_ACTIVITY_TYPES].map((t) => `'${t}'`).join(', ');
  return `case ${dealNotes ? `when a.type = 'deal_created' then coalesce(${dealNotes}, '')` : ''}
    when a.type in (${recorded}) then coalesce(a.changes->'notes'->>'to', '')
    else coalesce(a.description, '') end`;
}
