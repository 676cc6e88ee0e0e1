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

/**
 * The "common" shape (issue 33): a few hundred company names, each held by thousands of deals at a
 * million, made of one of 30 stems and one of 10 endings ("Hooli Systems", "Hooper Labs"); contacts named
 * from 60 first and 100 last names, so a term like "an" is in most of them.
 */
const STEMS = [
  'Hooli',
  'Hooper',
  'Acme',
  'Globex',
  'Initech',
  'Vandelay',
  'Contoso',
  'Northwind',
  'Zenith',
  'Umbrella',
  'Stark',
  'Wayne',
  'Wonka',
  'Tyrell',
  'Cyberdyne',
  'Soylent',
  'Aperture',
  'Gringotts',
  'Monarch',
  'Oscorp',
  'Pied Piper',
  'Dunder',
  'Sterling',
  'Prestige',
  'Gekko',
  'Massive',
  'Nakatomi',
  'Virtucon',
  'Wernham',
  'Blue Sun',
];
const ENDINGS = [
  'Systems',
  'Labs',
  'Group',
  'Holdings',
  'Industries',
  'Partners',
  'Logistics',
  'Media',
  'Foods',
  'Bank',
];
export const COMMON_COMPANIES = STEMS.flatMap((s) => ENDINGS.map((e) => `${s} ${e}`));
const FIRST = [
  'Anna',
  'Brian',
  'Diana',
  'Daniel',
  'Hannah',
  'Ian',
  'Joan',
  'Juan',
  'Ryan',
  'Susan',
  'Nathan',
  'Megan',
  'Alan',
  'Evan',
  'Jordan',
  'Morgan',
  'Ethan',
  'Logan',
  'Christian',
  'Frances',
  'Maria',
  'Laura',
  'Paul',
  'Peter',
  'Sara',
  'Chris',
  'Emily',
  'Olivia',
  'Noah',
  'Liam',
  'Sophia',
  'Mia',
  'Lucas',
  'Mason',
  'Ella',
  'Grace',
  'Leo',
  'Jack',
  'Henry',
  'Zoe',
  'Chloe',
  'Owen',
  'Adam',
  'Eva',
  'Nina',
  'Tom',
  'Kate',
  'Mark',
  'Rosa',
  'Omar',
  'Yuki',
  'Ravi',
  'Priya',
  'Wei',
  'Li',
  'Ahmed',
  'Fatima',
  'Ivan',
  'Olga',
  'Pablo',
];
const LAST = Array.from({ length: 100 }, (_, i) => {
  const a = ['Smith', 'Jones', 'Brown', 'Garcia', 'Miller', 'Davis', 'Martin', 'Lopez', 'Wilson', 'Anderson'];
  const b = ['', 'son', 'ton', 'man', 'ley', 'ford', 'field', 'wood', 'stein', 'berg'];
  return `${a[i % 10]}${b[Math.floor(i / 10)]}`;
});

export type Shape = 'today' | 'common';

/** The terms each shape's search calls ask for: a common one, a rare one, one found nowhere, a prefix as typed, and a term most contact names hold. */
export const TERMS: Record<
  Shape,
  { common: string; rare: (n: number) => string; none: string; prefix: string; contacts: string }
> = {
  today: {
    common: 'Hooli',
    rare: (n) => `person${n - 7}@`,
    none: 'qqxqz',
    prefix: 'hoo',
    contacts: 'person',
  },
  common: {
    common: 'Hooli Systems',
    rare: (n) => `.${LAST[(n - 7) % LAST.length]?.toLowerCase()}${n - 7}@`,
    none: 'qqxqz',
    prefix: 'hoo',
    contacts: 'an',
  },
};

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
 * N deals created evenly over the last two years (their activity dated then: an import dates a deal's
 * activity at its creation), as an organization that has used the CRM that long: 30% still open, 25% won,
 * 45% lost, a close date 2-16 weeks after creation, one contact each.
 *
 * Shape "today": 9 company names with one of 997 numbers ("Hooli 42"), titled "<company> <product>",
 * contacts "Person <i>". Shape "common" (issue 33): COMMON_COMPANIES, drawn at random, titled
 * "<Product> for <company>" (the company is not the title's prefix), contacts "<First> <Last>" with an
 * e-mail at the company's domain.
 */
export async function writeDeals(file: string, n: number, shape: Shape = 'today'): Promise<void> {
  const next = random(shape === 'today' ? n : n + 1);
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
    const product = PRODUCTS[i % PRODUCTS.length] as string;
    let company: string;
    let title: string;
    let contact: { name: string; email: string };
    if (shape === 'today') {
      company = `${COMPANIES[i % COMPANIES.length]} ${i % 997}`;
      title = `${company} ${product}`;
      contact = { name: `Person ${i}`, email: `person${i}@example.com` };
    } else {
      company = COMMON_COMPANIES[Math.floor(next() * COMMON_COMPANIES.length)] as string;
      title = `${product[0]?.toUpperCase()}${product.slice(1)} for ${company}`;
      const first = FIRST[Math.floor(next() * FIRST.length)] as string;
      const last = LAST[i % LAST.length] as string;
      const domain = company.toLowerCase().replace(/[^a-z]+/g, '');
      contact = {
        name: `${first} ${last}`,
        email: `${first.toLowerCase()}.${last.toLowerCase()}${i}@${domain}.com`,
      };
    }
    const row = {
      title,
      company_name: company,
      value: Math.round(next() * 200_000) + 500,
      stage,
      lead_source: SOURCES[i % SOURCES.length],
      expected_close_date: new Date(created + (14 + Math.floor(next() * 98)) * DAY).toISOString(),
      created_at: new Date(created).toISOString(),
      contacts: [{ ...contact, role_type: ROLES[i % ROLES.length] }],
    };
    if (!out.write(`${JSON.stringify(row)}\n`)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'close');
}
