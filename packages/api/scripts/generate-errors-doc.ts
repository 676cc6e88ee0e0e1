import { readFile, writeFile } from 'node:fs/promises';
import { ERRORS_DOC_FILE, renderErrorsDoc } from './errors-doc.ts';

await writeFile(ERRORS_DOC_FILE, renderErrorsDoc(await readFile(ERRORS_DOC_FILE, 'utf8')));
process.stdout.write(`wrote ${ERRORS_DOC_FILE.pathname}\n`);
