import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { type EntityManager, Organization } from '@crm/db';
import { importDeals } from '../../features/deals/deal-import.ts';
import type { Io } from './command-line.ts';
import { CliError } from './errors.ts';
import { openImportFile } from './import-file.ts';

/**
 * `crm import <file> --org <org_id>`: streams the file into the organization (see `importDeals`), draws
 * the progress (bytes of the file read, rows imported and rejected) on the terminal, writes each
 * rejected row to the rejects file as one JSON line (`{"line", "error", "row"}`), and answers a summary.
 */
export async function runImport(
  em: EntityManager,
  job: { file: string; orgId: string; rejectsPath: string },
  io: Io,
): Promise<Record<string, unknown>> {
  const org = await em.findOne(Organization, { id: job.orgId }, { filters: false });
  if (!org) throw new CliError(`organization ${job.orgId} does not exist`);
  const file = await openImportFile(job.file);
  const started = performance.now();
  let rejects: WriteStream | undefined;
  io.progress?.start(file.totalBytes);
  let tally: Awaited<ReturnType<typeof importDeals>>;
  try {
    tally = await importDeals(em, job.orgId, file.rows, {
      async rejected(row) {
        rejects ??= createWriteStream(job.rejectsPath);
        if (!rejects.write(`${JSON.stringify(row)}\n`)) await once(rejects, 'drain');
      },
      progress: (p) => io.progress?.update(file.bytesRead(), p),
    });
  } finally {
    io.progress?.stop();
    if (rejects) {
      rejects.end();
      await once(rejects, 'close');
    }
  }
  const seconds = (performance.now() - started) / 1000;
  if (tally.rejected > 0)
    io.stderr(
      `${tally.rejected} row(s) rejected: each is in ${job.rejectsPath} with its line and the reason`,
    );
  return {
    org_id: job.orgId,
    file: job.file,
    read: tally.read,
    imported: tally.imported,
    rejected: tally.rejected,
    rejects_file: tally.rejected > 0 ? job.rejectsPath : null,
    seconds: Math.round(seconds * 10) / 10,
    rows_per_second: Math.round(tally.imported / Math.max(seconds, 0.001)),
  };
}
