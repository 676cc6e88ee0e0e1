/**
 * Issue 33's calls against two running servers (say the base commit's and this one's, on one database
 * loaded with `crm import` of the "common" shape: scale-data.ts), interleaved rounds, one request at a
 * time; prints the median p50 per call, server and organization. 127.0.0.1 only.
 *
 *   AB_ORGS="10000=<api key>,1000000=<api key>" AB_SERVERS="base=3934,new=3933" node apps/bench/src/scale-ab.ts
 *
 * AB_ROUNDS (2), AB_SECONDS (3), AB_ONLY (a part of a call's name).
 */
import { COMMON_COMPANIES, TERMS } from './scale-data.ts';
import { measureSequential } from './sequential.ts';

const orgs = (process.env.AB_ORGS ?? '')
  .split(',')
  .filter(Boolean)
  .map((o) => {
    const [n, key] = o.split('=') as [string, string];
    return { n: Number(n), key };
  });
if (orgs.length === 0) throw new Error('AB_ORGS="<deals>=<api key>,…" is required');
const servers = (process.env.AB_SERVERS ?? 'base=3934,new=3933')
  .split(',')
  .map((s) => s.split('=') as [string, string]);
const S = (t: string) => `/api/v1/crm/search?q=${encodeURIComponent(t)}`;
const calls: Array<[string, (n: number, i: number) => string]> = [
  [
    'GET /search?q=<a common company name>',
    (_n, i) => S(COMMON_COMPANIES[i % COMMON_COMPANIES.length] as string),
  ],
  ['GET /search?q=<a prefix as typed> (hoo)', () => S(TERMS.common.prefix)],
  ['GET /search?q=<a rare term>', (n) => S(TERMS.common.rare(n))],
  ['GET /search?q=<no match>', () => S(TERMS.common.none)],
  [
    'GET /search?q=<two words>',
    (_n, i) => S(`${(COMMON_COMPANIES[i % COMMON_COMPANIES.length] as string).split(' ')[0]} renewal`),
  ],
  ['GET /contacts?q=an', () => '/api/v1/crm/contacts?limit=50&q=an'],
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
          () => ({ path: make(o.n, i++) }),
          {
            seconds: Number(process.env.AB_SECONDS ?? 3),
            warmupSeconds: 1,
          },
        );
        const k = `${name}|${label}|${o.n}`;
        res[k] = [...(res[k] ?? []), st.p50];
        if (st.non2xx) console.error(k, 'non2xx', st.statuses);
        console.error(`round ${r} ${k}: p50 ${st.p50.toFixed(2)}`);
      }
  }
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;
console.log(
  `| call | ${servers.flatMap(([l]) => orgs.map((o) => `${l} ${o.n.toLocaleString('en-US')}`)).join(' | ')} |`,
);
console.log(`|---|${servers.flatMap(() => orgs.map(() => '---')).join('|')}|`);
for (const [name] of calls) {
  if (only && !name.includes(only)) continue;
  console.log(
    `| ${name} | ${servers.flatMap(([l]) => orgs.map((o) => med(res[`${name}|${l}|${o.n}`] ?? []).toFixed(1))).join(' | ')} |`,
  );
}
