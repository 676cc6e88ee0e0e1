import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import type { DealHistory } from '../src/history.ts';
import { DEFAULT_STAGES } from './pipeline.ts';

type Row = Record<string, string>;
const read = (dir: string, file: string): Row[] =>
  parse(readFileSync(path.join(dir, file), 'utf8'), { columns: true, skip_empty_lines: true }) as Row[];

/**
 * The Maven "CRM Sales Opportunities" data as one organization's history. Each engaged opportunity is a
 * deal created at its engage_date in Qualified, with the product's list price as its value; a Won or
 * Lost one moves to Closed Won or Closed Lost at its close_date. The leaking columns are not used:
 * close_value (0 for every lost deal) never, and close_date only as the moment the deal closed, which
 * ends its training snapshots; no feature is derived from it. Prospecting rows (never engaged) are left out.
 */
export function opportunityHistory(dir: string): DealHistory[] {
  const prices = new Map(
    read(dir, 'products.csv').map((p) => [p.product?.replace(/\s+/g, ''), Number(p.sales_price)]),
  );
  const out: DealHistory[] = [];
  for (const row of read(dir, 'sales_pipeline.csv')) {
    if (!row.engage_date) continue;
    const created = new Date(`${row.engage_date}T12:00:00Z`);
    const outcome =
      row.deal_stage === 'Won' ? 'Closed Won' : row.deal_stage === 'Lost' ? 'Closed Lost' : null;
    const activities: DealHistory['activities'] = [
      { type: 'deal_created', at: created, description: 'Deal created', contactId: null, changes: null },
    ];
    if (outcome && row.close_date)
      activities.push({
        type: 'stage_changed',
        at: new Date(`${row.close_date}T12:00:00Z`),
        description: `Stage changed from Qualified to ${outcome}`,
        contactId: null,
        changes: { stage: { from: 'Qualified', to: outcome } },
      });
    out.push({
      deal: {
        id: row.opportunity_id as string,
        title: row.product ?? 'Deal',
        companyName: row.account || null,
        value: prices.get(row.product?.replace(/\s+/g, '')) ?? null,
        currency: 'USD',
        notes: null,
        expectedCloseDate: null,
        createdAt: created,
      },
      stages: DEFAULT_STAGES,
      stageName: outcome ?? 'Qualified',
      contacts: [],
      activities,
    });
  }
  return out;
}
