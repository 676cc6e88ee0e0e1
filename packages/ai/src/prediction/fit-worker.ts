import { parentPort, workerData } from 'node:worker_threads';
import type { DealHistory } from '../history.ts';
import { fitWinModel } from './model.ts';

/** Runs one fit in a worker thread: building snapshots and Newton steps over thousands of deals is CPU work. */
const { histories, now } = workerData as { histories: DealHistory[]; now: Date };
parentPort?.postMessage(fitWinModel(histories, now));
