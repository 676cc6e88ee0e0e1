import { ERRORS } from '../src/errors.ts';

/** The errors page: its table of codes is written from `ERRORS`; the prose around it is written by hand. */
export const ERRORS_DOC_FILE = new URL('../../../docs/api/errors.md', import.meta.url);

/** The comment the table follows (it says how the table is made), and the one that ends it. */
const START = '<!-- The table between these two comments is written by `npm run docs`';
const END = '<!-- end of the generated table -->';

/** One row per code, in the table's order: the code, its HTTP status and when it is answered. */
export function renderErrorsTable(): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  const rows = Object.entries(ERRORS).map(
    ([code, { status, when }]) => `| \`${code}\` | ${status} | ${cell(when)} |`,
  );
  return ['| code | status | when |', '|---|---|---|', ...rows].join('\n');
}

/** The page as it should be: `current` with the table between its two comments written afresh. */
export function renderErrorsDoc(current: string): string {
  const start = current.indexOf(START);
  const startEnd = start < 0 ? -1 : current.indexOf('-->', start);
  const end = current.indexOf(END);
  if (startEnd < 0 || end < startEnd)
    throw new Error(`${ERRORS_DOC_FILE.pathname}: the comments around the generated table are missing`);
  const tableAt = startEnd + '-->'.length;
  return `${current.slice(0, tableAt)}\n\n${renderErrorsTable()}\n\n${current.slice(end)}`;
}
