import http from 'node:http';
import type { LoadStats } from './load.ts';
import { cpuMsOf } from './processes.ts';

/** One request of a sequential run: what to send next. */
export interface NextRequest {
  method?: string;
  path: string;
  /** A JSON body, for a write. */
  body?: string;
}

/**
 * One request at a time over one kept-alive connection for `seconds` (after a thrown-away warm-up),
 * each timed with performance.now(). autocannon records latencies in whole milliseconds (a 0.6 ms answer
 * counts as 0), which makes the ratio of two sub-millisecond calls meaningless; here p50, p99 and the
 * mean keep their fractions. The server's CPU per request is read around the measured part.
 */
export async function measureSequential(
  url: string,
  key: string,
  next: () => NextRequest,
  opts: { seconds: number; warmupSeconds: number; pid?: number },
): Promise<LoadStats> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const statuses: Record<string, number> = {};
  const send = (req: NextRequest) =>
    new Promise<number>((resolve, reject) => {
      const r = http.request(
        `${url}${req.path}`,
        {
          agent,
          method: req.method ?? 'GET',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          timeout: 10_000,
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', reject);
        },
      );
      r.on('timeout', () => r.destroy(new Error('timeout')));
      r.on('error', reject);
      r.end(req.body);
    });
  const run = async (seconds: number, record: boolean) => {
    const latencies: number[] = [];
    let errors = 0;
    const until = performance.now() + seconds * 1000;
    while (performance.now() < until) {
      const t0 = performance.now();
      try {
        const status = await send(next());
        const ms = performance.now() - t0;
        if (!record) continue;
        if (status >= 200 && status < 300) latencies.push(ms);
        else statuses[status] = (statuses[status] ?? 0) + 1;
      } catch {
        errors++;
      }
    }
    return { latencies, errors };
  };
  try {
    await run(opts.warmupSeconds, false);
    const cpuBefore = opts.pid === undefined ? undefined : cpuMsOf(opts.pid);
    const t0 = performance.now();
    const { latencies, errors } = await run(opts.seconds, true);
    const elapsed = (performance.now() - t0) / 1000;
    const cpuAfter = opts.pid === undefined ? undefined : cpuMsOf(opts.pid);
    const non2xx = Object.values(statuses).reduce((a, b) => a + b, 0);
    const total = latencies.length + non2xx;
    const sorted = latencies.sort((a, b) => a - b);
    const at = (q: number) =>
      sorted.length
        ? (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number)
        : Number.NaN;
    return {
      reqPerSec: total / elapsed,
      p50: at(0.5),
      p99: at(0.99),
      mean: sorted.length ? sorted.reduce((a, b) => a + b, 0) / sorted.length : Number.NaN,
      total,
      non2xx,
      errors,
      timeouts: 0,
      statuses,
      cpuMsPerRequest:
        cpuBefore === undefined || cpuAfter === undefined || total === 0
          ? Number.NaN
          : (cpuAfter - cpuBefore) / total,
    };
  } finally {
    agent.destroy();
  }
}
