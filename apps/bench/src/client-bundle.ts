/**
 * `npm run bench:client`: what @crm/client weighs in a browser app. Bundles a one-line app per way of
 * using it with Vite (production build, minified, every dependency inlined, browser conditions) against
 * the built package (packages/client/dist, as an app installs it) and prints raw and gzipped bytes. Types
 * weigh nothing at run time, so "without the REST types" is the tRPC client alone. Goal: under 15 KB
 * gzipped for it.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build, type Rollup } from 'vite';

const CLIENT = fileURLToPath(new URL('../../../packages/client/dist/index.js', import.meta.url));
const GOAL_GZIPPED = 15 * 1024;
const options = "{ baseUrl: 'https://crm.example.com', apiKey: 'ck_example' }";

const APPS: Array<[string, string]> = [
  [
    'tRPC client (createCrmClient, CrmError, responseOf, allPages)',
    `import { allPages, CrmError, createCrmClient, responseOf } from '@crm/client';
     const crm = createCrmClient(${options});
     export const run = async () => { try { for await (const d of allPages((after) => crm.deals.list.query({ after }))) console.log(d, responseOf(d)); } catch (e) { if (e instanceof CrmError) console.log(e.code); } };`,
  ],
  [
    'REST client (createCrmRestClient)',
    `import { createCrmRestClient } from '@crm/client';
     export const run = () => createCrmRestClient(${options}).GET('/deals');`,
  ],
  [
    'both clients',
    `import { createCrmClient, createCrmRestClient } from '@crm/client';
     export const run = () => [createCrmClient(${options}).deals.list.query({}), createCrmRestClient(${options}).GET('/deals')];`,
  ],
  [
    'verifyWebhook alone (a receiver)',
    `import { verifyWebhook } from '@crm/client';
     export const run = (body, headers) => verifyWebhook(body, headers, 'whsec_c2VjcmV0');`,
  ],
];

if (!existsSync(CLIENT)) {
  console.error(`${CLIENT} is missing: build the client first (npm run build)`);
  process.exit(1);
}
const dir = await mkdtemp(path.join(os.tmpdir(), 'crm-client-bundle-'));
try {
  console.log('| app | raw | gzipped |\n|---|---|---|');
  for (const [name, source] of APPS) {
    const entry = path.join(dir, 'app.js');
    await writeFile(entry, source);
    const output = (await build({
      configFile: false,
      logLevel: 'silent',
      root: dir,
      resolve: { alias: { '@crm/client': CLIENT } },
      build: { write: false, minify: true, lib: { entry, formats: ['es'], fileName: 'app' } },
    })) as Rollup.RollupOutput[];
    const code = output
      .flatMap((o) => o.output)
      .flatMap((chunk) => (chunk.type === 'chunk' ? [chunk.code] : []));
    const raw = code.reduce((sum, c) => sum + Buffer.byteLength(c), 0);
    const gzipped = code.reduce((sum, c) => sum + gzipSync(c, { level: 9 }).length, 0);
    const mark = name.startsWith('tRPC')
      ? gzipped < GOAL_GZIPPED
        ? ' (goal < 15 KB: met)'
        : ' (goal < 15 KB: MISSED)'
      : '';
    console.log(`| ${name} | ${(raw / 1024).toFixed(1)} KB | ${(gzipped / 1024).toFixed(1)} KB${mark} |`);
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
