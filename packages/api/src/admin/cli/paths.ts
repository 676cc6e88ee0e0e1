import { resolve } from 'node:path';

/**
 * A path the user typed, from the directory they typed it in: `npm run crm -- import deals.csv` runs the
 * CLI in the checkout, and npm keeps the directory it was called from in INIT_CWD (a relative path was
 * looked for in the checkout).
 */
export const userPath = (path: string) => resolve(process.env.INIT_CWD ?? process.cwd(), path);
