/**
 * The service's search statement (`searchSql`, the same SQL a search sends) run under EXPLAIN (ANALYZE,
 * BUFFERS) on a database, say one kept by `SCALE_KEEP_DATABASE=true npm run bench:scale`: each run's
 * planning and execution time, and with EX_FULL the whole plan of run EX_SHOW (default the last).
 *
 *   EX_URL=postgres://…/crm_scale_… EX_ORG=<org id> EX_Q="Hooli renewal" EX_RUNS=3 EX_FULL=1 node apps/bench/src/explain-search.ts
 *
 * EX_LARGE: `deals/contacts`, whether each table is read as a large organization's (default true/true);
 * EX_SET: a statement run first on the connection (`set max_parallel_workers_per_gather = 2`).
 */

import { searchSql } from '@crm/api';
import pg from 'pg';

const client = new pg.Client({ connectionString: process.env.EX_URL });
await client.connect();
// As the service's connections run (packages/db/src/orm.ts), unless EX_SET says otherwise.
await client.query('set jit = off');
await client.query('set max_parallel_workers_per_gather = 0');
if (process.env.EX_SET) await client.query(process.env.EX_SET);
const [ld, lc] = (process.env.EX_LARGE ?? 'true/true').split('/').map((x) => x === 'true');
const st = searchSql(
  process.env.EX_ORG as string,
  process.env.EX_Q as string,
  { deals: !!ld, contacts: !!lc },
  2000,
);
const runs = Number(process.env.EX_RUNS ?? 3);
for (let i = 0; i < runs; i++) {
  const t = performance.now();
  const r = await client.query(
    `explain (analyze, buffers${process.env.EX_FULL ? '' : ', summary'}) ${st.sql}`,
    st.parameters as unknown[],
  );
  const lines = r.rows.map((x) => x['QUERY PLAN'] as string);
  if (i === Number(process.env.EX_SHOW ?? runs - 1) && process.env.EX_FULL) console.log(lines.join('\n'));
  console.log(
    `run ${i}: wall ${(performance.now() - t).toFixed(1)} ms;`,
    lines
      .filter((l) => /Planning Time|Execution Time/.test(l))
      .join(' ')
      .replace(/\s+/g, ' '),
  );
}
await client.end();
