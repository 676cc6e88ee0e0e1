import { writeFile } from 'node:fs/promises';
import { QUERY_FILE, renderQueryTypes } from './query-types.ts';
import { GENERATED_FILE, renderRestTypes } from './rest-types.ts';
import { ROUTER_FILE, renderRouterTypes } from './router-types.ts';

await writeFile(GENERATED_FILE, await renderRestTypes());
process.stdout.write(`wrote ${GENERATED_FILE.pathname}\n`);
await writeFile(ROUTER_FILE, renderRouterTypes());
process.stdout.write(`wrote ${ROUTER_FILE.pathname}\n`);
await writeFile(QUERY_FILE, await renderQueryTypes());
process.stdout.write(`wrote ${QUERY_FILE.pathname}\n`);
