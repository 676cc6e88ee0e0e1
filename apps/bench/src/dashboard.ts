/**
 * `npm run bench:dashboard`: the dashboard's weight and first load. Prints the built JavaScript (raw and
 * gzipped, what the first page loads and what loads later), then starts the server on a fresh embedded
 * database and opens /admin in Debian's Chromium with an empty cache BENCH_DASHBOARD_LOADS times (default
 * 9): time to the load event and to the sign-in form, median and max. Targets: JS < 250 KB gzipped,
 * first load < 1 s on loopback. A second run of the same page with a warm cache is shown beside it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { startServerProcess } from './processes.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const DIST = path.join(ROOT, 'apps/dashboard/dist');
const LOADS = Number(process.env.BENCH_DASHBOARD_LOADS ?? 9);
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

function bundleSizes(): void {
  const html = readFileSync(path.join(DIST, 'index.html'), 'utf8');
  const files = readdirSync(path.join(DIST, 'assets')).filter((f) => f.endsWith('.js'));
  let total = 0;
  console.log('\n| file | loaded | raw | gzipped |\n|---|---|---|---|');
  for (const file of files) {
    const bytes = readFileSync(path.join(DIST, 'assets', file));
    const gz = gzipSync(bytes, { level: 9 }).length;
    total += gz;
    console.log(
      `| ${file} | ${html.includes(file) ? 'first page' : 'on demand'} | ${kb(bytes.length)} | ${kb(gz)} |`,
    );
  }
  console.log(`| **all JavaScript** | | | **${kb(total)}** (target < 250 KB) |`);
}

async function firstLoads(url: string): Promise<void> {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
  const cold: number[] = [];
  const ready: number[] = [];
  const warm: number[] = [];
  try {
    for (let i = 0; i < LOADS; i++) {
      const context = await browser.newContext();
      const page = await context.newPage();
      const started = performance.now();
      await page.goto(`${url}/admin`, { waitUntil: 'load' });
      cold.push(performance.now() - started);
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      ready.push(performance.now() - started);
      const again = performance.now();
      await page.reload({ waitUntil: 'load' });
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      warm.push(performance.now() - again);
      await context.close();
    }
  } finally {
    await browser.close();
  }
  const row = (name: string, xs: number[]) =>
    console.log(`| ${name} | ${median(xs).toFixed(0)} ms | ${Math.max(...xs).toFixed(0)} ms |`);
  console.log(`\n${LOADS} loads of /admin (redirects to /admin/sign-in), empty cache each time:\n`);
  console.log('| | median | max |\n|---|---|---|');
  row('load event, empty cache', cold);
  row('sign-in form shown, empty cache (target < 1 s)', ready);
  row('sign-in form shown, reload with a warm cache', warm);
}

bundleSizes();
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'crm-bench-dashboard-'));
const server = await startServerProcess('server', path.join(ROOT, 'apps/server/src/main.ts'), {
  CRM_DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
});
try {
  await firstLoads(server.url);
} finally {
  await server.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
