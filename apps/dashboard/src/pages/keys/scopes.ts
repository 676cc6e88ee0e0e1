import type { Scope } from '@crm/api';

/** What a key holds for "every scope, now and later" (ALL_SCOPES in packages/api/src/scopes.ts). */
export const FULL_ACCESS = '*';

/**
 * The scopes a key can be limited to, in the server's order: SCOPES in packages/api/src/scopes.ts. The
 * dashboard imports only types from @crm/api, so the list is repeated here; typing it as a Record over
 * the server's Scope type makes a scope added (or renamed) there fail to compile until it is described.
 */
export const SCOPE_INFO: Record<Scope, { group: string; description: string }> = {
  'deals:read': { group: 'Deals', description: 'read deals' },
  'deals:write': { group: 'Deals', description: 'create, change, delete deals' },
  'contacts:read': { group: 'Contacts', description: 'read contacts' },
  'contacts:write': { group: 'Contacts', description: 'create and change contacts' },
  'contacts:erase': { group: 'Contacts', description: 'erase a person and their data for good' },
  'companies:read': { group: 'Companies', description: 'read companies' },
  'companies:write': { group: 'Companies', description: 'create, change, delete companies' },
  'activities:read': { group: 'Activities', description: 'read logged activities and deal timelines' },
  'activities:write': {
    group: 'Activities',
    description: 'log, change, delete activities (notes, tasks, calls)',
  },
  'pipeline:read': {
    group: 'Pipeline, search and AI',
    description: 'read pipelines, their stages and health',
  },
  'pipeline:write': {
    group: 'Pipeline, search and AI',
    description: 'create, change, delete pipelines and stages (a stage delete moves its deals)',
  },
  search: { group: 'Pipeline, search and AI', description: 'search deals, contacts and companies' },
  ai: { group: 'Pipeline, search and AI', description: 'use the AI features (analysis, briefing, coaching)' },
  'usage:read': { group: 'Usage', description: 'read usage and quotas' },
  'webhooks:read': { group: 'Webhooks and events', description: 'read webhooks and deliveries' },
  'webhooks:write': { group: 'Webhooks and events', description: 'manage webhooks, replay deliveries' },
  'events:read': { group: 'Webhooks and events', description: 'read the event feed' },
  'schema:read': {
    group: 'Custom fields',
    description: 'read the custom fields of deals, contacts and companies',
  },
  'schema:write': { group: 'Custom fields', description: 'define, change and archive custom fields' },
  'views:read': { group: 'Saved views', description: 'read saved views (named filters of a list)' },
  'views:write': { group: 'Saved views', description: 'save, change and delete views' },
};
export const SCOPES = Object.keys(SCOPE_INFO) as Scope[];
export const SCOPE_GROUPS = [...new Set(SCOPES.map((s) => SCOPE_INFO[s].group))].map((group) => ({
  group,
  scopes: SCOPES.filter((s) => SCOPE_INFO[s].group === group),
}));
