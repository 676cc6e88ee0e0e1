/**
 * Issue 33's calls against two running servers (say the base commit's and this one's, on one database
 * loaded by `SCALE_KEEP_DATABASE=true npm run bench:scale`: scale-data.ts), interleaved rounds, one
 * request at a time; prints the median p50 per call, server and organization. 127.0.0.1 only.
 *
 *   AB_ORGS="common:10000=<api key>,common:1000000=<api key>" AB_SERVERS="base=3934,new=3933" node apps/bench/src/scale-ab.ts
 *
 * An organization's shape (`today` or `common`, default `common`) picks the terms its calls ask for, as bench:scale's.
 * AB_ROUNDS (2), AB_SECONDS (3), AB_ONLY (a part of a call's name).
 */
import { COMMON_COMPANIES, COMPANIES, type Shape, TERMS } from './scale-data.ts';
import { measureSequential } from './sequential.ts';

const orgs = (process.env.AB_ORGS ?? '')
  .split(',')
  .filter(Boolean)
  .map((o) => {
    const [org, key] = o.split('=') as [string, string];
    const [shape, n] = org.includes(':') ? (org.split(':') as [Shape, string]) : (['common', org] as const);
    return { shape, n: Number(n), key, label: `${shape} ${Number(n).toLocaleString('en-US')}` };
  });
if (orgs.length === 0) throw new Error('AB_ORGS="<deals>=<api key>,…" is required');
const servers = (process.env.AB_SERVERS ?? 'base=3934,new=3933')
  .split(',')
  .map((s) => s.split('=') as [string, string]);
const S = (t: string) => `/api/v1/crm/search?q=${encodeURIComponent(t)}`;
type Org = (typeof orgs)[number];
const company = (o: Org, i: number) =>
  (o.shape === 'today'
    ? COMPANIES[i % COMPANIES.length]
    : COMMON_COMPANIES[i % COMMON_COMPANIES.length]) as string;
const calls: Array<[string, (o: Org, i: number) => string]> = [
  ['GET /search?q=<a common company name>', (o, i) => S(company(o, i))],
  ['GET /search?q=<a prefix as typed> (hoo)', (o) => S(TERMS[o.shape].prefix)],
  ['GET /search?q=<a rare term>', (o) => S(TERMS[o.shape].rare(o.n))],
  ['GET /search?q=<no match>', (o) => S(TERMS[o.shape].none)],
  ['GET /search?q=<two words>', (o, i) => S(`${company(o, i).split(' ')[0]} renewal`)],
  [
    'GET /contacts?q=<a term most names hold>',
    (o) => `/api/v1/crm/contacts?limit=50&q=${TERMS[o.shape].contacts}`,
  ],
  [
    'GET /contacts?q=<a rare term>',
    (o) => `/api/v1/crm/contacts?limit=50&q=${encodeURIComponent(TERMS[o.shape].rare(o.n))}`,
  ],
  ['GET /pipeline/health', () => '/api/v1/crm/pipeline/health'],
  ['GET /briefing', () => '/api/v1/crm/briefing'],
];
const only = process.env.AB_ONLY;
const rounds = Number(process.env.AB_ROUNDS ?? 2);
const res: Record<string, number[]> = {};
for (let r = 0; r < rounds; r++)
  for (const [name, make] of calls) {
    if (only && !name.includes(only)) continue;
    for (const [label, port] of servers)
      for (const o of orgs) {
        let i = 0;
        const st = await measureSequential(
          `http://127.0.0.1:${port}`,
          o.key,
          () => ({ path: make(o, i++) }),
          {
            seconds: Number(process.env.AB_SECONDS ?? 3),
            warmupSeconds: 1,
          },
        );
        const k = `${name}|${label}|${o.label}`;
        res[k] = [...(res[k] ?? []), st.p50];
        if (st.non2xx) console.error(k, 'non2xx', st.statuses);
        console.error(`round ${r} ${k}: p50 ${st.p50.toFixed(2)}`);
      }
  }
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;
console.log(`| call | ${servers.flatMap(([l]) => orgs.map((o) => `${l} ${o.label}`)).join(' | ')} |`);
console.log(`|---|${servers.flatMap(() => orgs.map(() => '---')).join('|')}|`);
for (const [name] of calls) {
  if (only && !name.includes(only)) continue;
  console.log(
    `| ${name} | ${servers.flatMap(([l]) => orgs.map((o) => med(res[`${name}|${l}|${o.label}`] ?? []).toFixed(1))).join(' | ')} |`,
  );
}
