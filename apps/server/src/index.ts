export { API_PREFIX, buildApp, TRPC_PREFIX } from './app.ts';
export { createLogger, type Logger } from './logger.ts';
export { type RunningServer, startServer, startWorkerProcess } from './server.ts';
export type { RunningWorker } from './webhook-worker.ts';
