import { Migration } from '@mikro-orm/migrations';

/**
 * The briefing and coaching name the organization's overdue tasks (docs/ai.md): open tasks whose due date
 * has passed, oldest first, counted up to 1,000. This partial index holds only open tasks, by due date, so
 * that read costs its bound however many activities and done tasks the organization has.
 */
export class Migration20261202000400_ai_open_tasks extends Migration {
  override name = 'Migration20261202000400_ai_open_tasks';

  override up(): void {
    this.addSql(
      `create index engagements_open_tasks_due on engagements (org_id, due_at, id) where type = 'task' and status = 'open';`,
    );
  }
}
