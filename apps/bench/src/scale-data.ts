import { once } from 'node:events';
import { createWriteStream } from 'node:fs';

/** The organizations `npm run bench:scale` loads: deals as an NDJSON file for `crm import`. */

export const COMPANIES = [
  'Acme',
  'Globex',
  'Initech',
  'Hooli',
  'Vandelay',
  'Contoso',
  'Northwind',
  'Zenith',
  'Umbrella',
];
const PRODUCTS = ['rollout', 'renewal', 'expansion', 'pilot', 'migration', 'upgrade'];
const SOURCES = ['Website', 'Referral', 'Outbound', 'Event', 'Partner'];
const ROLES = ['champion', 'economic_buyer', 'influencer', 'end_user', 'blocker', 'unknown'];
const DAY = 86_400_000;

/** A small deterministic generator (mulberry32): the same rows for the same N on every run, dated from now. */
function random(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * N deals created evenly over the last two years, as an organization that has used the CRM that long:
 * 30% still open, 25% won, 45% lost, a close date 2-16 weeks after creation, one contact each.
 */
export async function writeDeals(file: string, n: number): Promise<void> {
  const next = random(n);
  const out = createWriteStream(file);
  const now = Date.now();
  for (let i = 0; i < n; i++) {
    const r = next();
    const stage =
      r < 0.3
        ? (['Lead', 'Qualified', 'Proposal', 'Negotiation'][Math.floor(next() * 4)] as string)
        : r < 0.55
          ? 'Closed Won'
          : 'Closed Lost';
    const created = now - Math.floor(next() * 730 * DAY) - 60_000;
    const company = `${COMPANIES[i % COMPANIES.length]} ${i % 997}`;
    const row = {
      title: `${company} ${PRODUCTS[i % PRODUCTS.length]}`,
      company_name: company,
      value: Math.round(next() * 200_000) + 500,
      stage,
      lead_source: SOURCES[i % SOURCES.length],
      expected_close_date: new Date(created + (14 + Math.floor(next() * 98)) * DAY).toISOString(),
      created_at: new Date(created).toISOString(),
      contacts: [
        {
          name: `Person ${i}`,
          email: `person${i}@example.com`,
          role_type: ROLES[i % ROLES.length],
        },
      ],
    };
    if (!out.write(`${JSON.stringify(row)}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'close');
}
