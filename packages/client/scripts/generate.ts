import { writeFile } from 'node:fs/promises';
import { GENERATED_FILE, renderRestTypes } from './rest-types.ts';

await writeFile(GENERATED_FILE, await renderRestTypes());
process.stdout.write(`wrote ${GENERATED_FILE.pathname}\n`);
