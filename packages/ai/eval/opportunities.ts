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
  // The account's and the sales team's attributes, as an organization would keep them in custom fields
  // (number and select): candidate features of the win model (docs/ai.md: Quality).
  const accounts = new Map(read(dir, 'accounts.csv').map((a) => [a.account, a]));
  const teams = new Map(read(dir, 'sales_teams.csv').map((t) => [t.sales_agent, t]));
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
        custom: customOf(accounts.get(row.account ?? ''), teams.get(row.sales_agent ?? '')),
      },
      customFields: CUSTOM_FIELDS,
      stages: DEFAULT_STAGES,
      stageName: outcome ?? 'Qualified',
      contacts: [],
      activities,
    });
  }
  return out;
}

const CUSTOM_FIELDS: NonNullable<DealHistory['customFields']> = [
  { key: 'sector', label: 'Sector', type: 'select', aiHint: null },
  { key: 'revenue', label: 'Account revenue (millions)', type: 'number', aiHint: null },
  { key: 'employees', label: 'Employees', type: 'number', aiHint: null },
  { key: 'regional_office', label: 'Regional office', type: 'select', aiHint: null },
  { key: 'manager', label: 'Manager', type: 'select', aiHint: null },
];

/** The custom values of a deal: its account's sector, revenue and head count, its agent's office and manager. */
function customOf(account: Row | undefined, team: Row | undefined): Record<string, unknown> {
  const custom: Record<string, unknown> = {};
  if (account?.sector) custom.sector = account.sector;
  if (account?.revenue) custom.revenue = Number(account.revenue);
  if (account?.employees) custom.employees = Number(account.employees);
  if (team?.regional_office) custom.regional_office = team.regional_office;
  if (team?.manager) custom.manager = team.manager;
  return custom;
}
