import type { ApiKey } from '../../api.ts';
import { CodeList } from '../../components/CodeList.tsx';
import { formatDateTime } from '../../format.ts';
import { FULL_ACCESS } from './scopes.ts';

/** How a key is named in sentences: its name and prefix, or the prefix alone. */
export function keyLabel(key: Pick<ApiKey, 'name' | 'prefix'>): string {
  return key.name ? `${key.name} (${key.prefix}…)` : `${key.prefix}…`;
}

export const isPast = (iso: string | null, now: number) => iso !== null && Date.parse(iso) <= now;

export function DateTime({ iso }: { iso: string }) {
  return <time dateTime={iso}>{formatDateTime(iso)}</time>;
}

/** "Full access", or the key's scopes. */
export function ScopeList({ scopes }: { scopes: readonly string[] }) {
  if (scopes.includes(FULL_ACCESS)) return <>Full access</>;
  return <CodeList items={scopes} />;
}
