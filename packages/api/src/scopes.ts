/**
 * What an API key may call. Each operation names the one scope it needs in its meta (and so in the route
 * table, the OpenAPI document and the MCP tool list); a key holds a list of scopes, or `*` for all.
 */
export const SCOPES = [
  'deals:read',
  'deals:write',
  'contacts:read',
  'contacts:write',
  'contacts:erase',
  'companies:read',
  'companies:write',
  'activities:read',
  'activities:write',
  'pipeline:read',
  'pipeline:write',
  'search',
  'ai',
  'usage:read',
  'webhooks:read',
  'webhooks:write',
  'events:read',
  'schema:read',
  'schema:write',
  'views:read',
  'views:write',
] as const;
export type Scope = (typeof SCOPES)[number];

/** Every scope, now and later: what keys made before scopes existed hold. */
export const ALL_SCOPES = '*';

export function allows(granted: readonly string[], needed: Scope): boolean {
  return granted.includes(ALL_SCOPES) || granted.includes(needed);
}

/**
 * A key's scopes from a comma-separated list (`deals:read,search`) or a list: each known, each once, in
 * the documented order; `*` stands alone. Throws an Error naming what is wrong.
 */
export function parseScopes(input: string | readonly string[]): string[] {
  const names = (typeof input === 'string' ? input.split(',') : [...input])
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.length === 0) throw new Error(`no scope given: name at least one of ${SCOPES.join(', ')}, or *`);
  if (names.includes(ALL_SCOPES)) {
    if (names.length > 1) throw new Error('* already grants every scope: give it alone');
    return [ALL_SCOPES];
  }
  const unknown = names.filter((n) => !(SCOPES as readonly string[]).includes(n));
  if (unknown.length > 0)
    throw new Error(
      `unknown scope${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}: the scopes are ${SCOPES.join(', ')}, or *`,
    );
  return SCOPES.filter((s) => names.includes(s));
}
