import { Worker } from 'node:worker_threads';
import type { DealHistory } from '../history.ts';
import type { FittedWinModel } from './model.ts';

/**
 * Fits the organization's model in a worker thread, so the server's event loop (and every request on it)
 * never waits for the CPU work. Histories cross by structured clone (dates included).
 */
export function fitWinModelOffThread(histories: DealHistory[], now: Date): Promise<FittedWinModel | null> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./fit-worker.ts', import.meta.url), {
      workerData: { histories, now },
    });
    let settled = false;
    worker.once('message', (model: FittedWinModel | null) => {
      settled = true;
      resolve(model);
      void worker.terminate();
    });
    worker.once('error', (err) => {
      settled = true;
      reject(err);
    });
    worker.once('exit', (code) => {
      if (!settled) reject(new Error(`the fitting worker exited with code ${code}`));
    });
  });
}
