/**
 * The custom fields of the bench's "+ 20 custom" scenarios (issue 29): 20 fields on deals, a mix an
 * organization would define (text, one of them unique and one with a pattern, numbers and currencies with
 * ranges, selects of 10 options, a multi-select, booleans, dates, e-mails, a URL), and the values a deal
 * holds: written by SQL when seeding (`customValuesSql`) and sent by POST /deals (`customValuesOf`), the
 * same shapes either way.
 */
import type { CustomFieldCreateInput } from '@crm/api';

const options = (values: readonly string[]) => values.map((value) => ({ value }));

export const REGIONS = [
  'amer_east',
  'amer_west',
  'latam',
  'emea_north',
  'emea_south',
  'dach',
  'uk_ireland',
  'apac_north',
  'apac_south',
  'anz',
] as const;
export const INDUSTRIES = [
  'software',
  'finance',
  'healthcare',
  'retail',
  'manufacturing',
  'logistics',
  'energy',
  'media',
  'education',
  'public_sector',
] as const;
export const TIERS = [
  'free',
  'starter',
  'team',
  'business',
  'growth',
  'scale',
  'enterprise',
  'enterprise_plus',
  'strategic',
  'custom',
] as const;
export const PRODUCT_OPTIONS = [
  'crm',
  'analytics',
  'ai_insights',
  'webhooks',
  'api_access',
  'sso',
  'audit_log',
  'sandbox',
  'premium_support',
  'training',
] as const;

/** The 20 definitions, in the order they are created. */
export const CUSTOM_FIELDS: CustomFieldCreateInput[] = [
  { key: 'external_id', label: 'External ID', type: 'text', unique: true },
  { key: 'po_number', label: 'PO number', type: 'text', validation: { pattern: '^PO-[0-9]{6}$' } },
  { key: 'champion', type: 'text', ai_hint: 'champion' },
  { key: 'competitor', type: 'text', ai_hint: 'competition' },
  { key: 'next_step', label: 'Next step', type: 'text', validation: { max_length: 500 } },
  { key: 'arr', label: 'ARR', type: 'currency', validation: { min: 0 }, ai_hint: 'metrics' },
  { key: 'budget', type: 'currency', validation: { min: 0 } },
  { key: 'seats', type: 'number', validation: { min: 1, max: 100_000 } },
  { key: 'discount_pct', label: 'Discount %', type: 'number', validation: { min: 0, max: 100 } },
  { key: 'region', type: 'select', options: options(REGIONS) },
  { key: 'industry', type: 'select', options: options(INDUSTRIES) },
  { key: 'tier', type: 'select', options: options(TIERS) },
  { key: 'products', type: 'multi_select', options: options(PRODUCT_OPTIONS) },
  { key: 'renewal', type: 'boolean' },
  { key: 'legal_review', label: 'Legal review', type: 'boolean', ai_hint: 'paper_process' },
  { key: 'contract_start', type: 'date' },
  { key: 'contract_end', type: 'date' },
  { key: 'billing_email', type: 'email' },
  { key: 'economic_buyer_email', type: 'email', ai_hint: 'economic_buyer' },
  { key: 'website', type: 'url' },
];

const FIRST = ['Ana', 'Ben', 'Chen', 'Dana', 'Emeka', 'Freya', 'Goran', 'Hana', 'Ivo', 'Jun'];
const LAST = ['Abara', 'Berg', 'Costa', 'Dahl', 'Eze', 'Fuchs', 'Gupta', 'Holm', 'Ito', 'Jansen'];
const RIVALS = ['Salesforce', 'HubSpot', 'Pipedrive', 'Zoho', 'Attio', 'Close', 'Copper', 'in-house'];
const DOMAINS = ['acme', 'globex', 'initech', 'hooli', 'vandelay', 'contoso', 'northwind', 'zenith'];

const at = <T>(list: readonly T[], i: number): T =>
  list[((i % list.length) + list.length) % list.length] as T;
const day = (base: string, offset: number) =>
  new Date(Date.parse(`${base}T00:00:00Z`) + offset * 86_400_000).toISOString().slice(0, 10);

/** The 20 values of deal `n` (about 750 bytes of JSON), `externalId` the unique one's. */
export function customValuesOf(n: number, externalId: string): Record<string, unknown> {
  const domain = at(DOMAINS, n * 3);
  const first = at(FIRST, n * 7);
  const last = at(LAST, n * 11);
  return {
    external_id: externalId,
    po_number: `PO-${String((n * 7919) % 1_000_000).padStart(6, '0')}`,
    champion: `${first} ${last}`,
    competitor: at(RIVALS, n * 5),
    next_step: `Send the revised order form to ${first} and book the security review before the end of the quarter`,
    arr: ((n * 7919) % 250_000) + 500.5,
    budget: ((n * 104_729) % 500_000) + 1000,
    seats: 5 + ((n * 31) % 500),
    discount_pct: (n * 13) % 40,
    region: at(REGIONS, n),
    industry: at(INDUSTRIES, n * 3),
    tier: at(TIERS, n * 7),
    products: [at(PRODUCT_OPTIONS, n), at(PRODUCT_OPTIONS, n + 3), at(PRODUCT_OPTIONS, n + 6)],
    renewal: n % 2 === 0,
    legal_review: n % 3 === 0,
    contract_start: day('2026-01-01', n % 365),
    contract_end: day('2027-01-01', n % 365),
    billing_email: `billing@${domain}.example`,
    economic_buyer_email: `${first}.${last}@${domain}.example`.toLowerCase(),
    website: `https://www.${domain}.example/`,
  };
}

/** A SQL text[] literal of constant words (none contain quotes). */
const words = (list: readonly string[]) => `array[${list.map((w) => `'${w}'`).join(', ')}]`;
const pickSql = (list: readonly string[], expr: string) =>
  `(${words(list)})[1 + (((${expr}) % ${list.length}) + ${list.length}) % ${list.length}]`;

/**
 * `customValuesOf(n, externalId)` as a SQL jsonb expression of an integer expression `n` and a text
 * expression `externalId`, for seeding thousands of deals in one statement.
 */
export function customValuesSql(n: string, externalId: string): string {
  const domain = pickSql(DOMAINS, `${n} * 3`);
  const first = pickSql(FIRST, `${n} * 7`);
  const last = pickSql(LAST, `${n} * 11`);
  return `jsonb_build_object(
    'external_id', ${externalId},
    'po_number', 'PO-' || lpad(((${n} * 7919) % 1000000)::text, 6, '0'),
    'champion', ${first} || ' ' || ${last},
    'competitor', ${pickSql(RIVALS, `${n} * 5`)},
    'next_step', 'Send the revised order form to ' || ${first} || ' and book the security review before the end of the quarter',
    'arr', ((${n} * 7919) % 250000) + 500.5,
    'budget', ((${n}::bigint * 104729) % 500000) + 1000,
    'seats', 5 + ((${n} * 31) % 500),
    'discount_pct', (${n} * 13) % 40,
    'region', ${pickSql(REGIONS, n)},
    'industry', ${pickSql(INDUSTRIES, `${n} * 3`)},
    'tier', ${pickSql(TIERS, `${n} * 7`)},
    'products', jsonb_build_array(${pickSql(PRODUCT_OPTIONS, n)}, ${pickSql(PRODUCT_OPTIONS, `${n} + 3`)}, ${pickSql(PRODUCT_OPTIONS, `${n} + 6`)}),
    'renewal', ${n} % 2 = 0,
    'legal_review', ${n} % 3 = 0,
    'contract_start', to_char(date '2026-01-01' + (${n} % 365)::int, 'YYYY-MM-DD'),
    'contract_end', to_char(date '2027-01-01' + (${n} % 365)::int, 'YYYY-MM-DD'),
    'billing_email', 'billing@' || ${domain} || '.example',
    'economic_buyer_email', lower(${first} || '.' || ${last} || '@' || ${domain} || '.example'),
    'website', 'https://www.' || ${domain} || '.example/'
  )`;
}
