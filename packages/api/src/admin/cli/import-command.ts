import { type FileHandle, open } from 'node:fs/promises';
import type { EntityManager } from '@crm/db';
import { ImportStopped, importDeals } from '../../features/deals/deal-import.ts';
import { organizationExists } from '../organizations.ts';
import { CliError } from './errors.ts';
import { openImportFile } from './import-file.ts';
import type { Io } from './io.ts';

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
  if (!(await organizationExists(em, job.orgId)))
    throw new CliError(`organization ${job.orgId} does not exist`);
  const file = await openImportFile(job.file);
  const started = performance.now();
  let rejects: FileHandle | undefined;
  io.progress?.start(file.totalBytes);
  let tally: Awaited<ReturnType<typeof importDeals>>;
  try {
    tally = await importDeals(em, job.orgId, file.rows, {
      async rejected(row) {
        try {
          rejects ??= await open(job.rejectsPath, 'w');
          await rejects.write(`${JSON.stringify(row)}\n`);
        } catch (err) {
          throw new CliError(`cannot write the rejects file ${job.rejectsPath}: ${(err as Error).message}`);
        }
      },
      progress: (p) => io.progress?.update(file.bytesRead(), p),
    });
  } catch (err) {
    if (err instanceof ImportStopped) throw new CliError(err.message);
    throw err;
  } finally {
    io.progress?.stop();
    await rejects?.close();
  }
  const seconds = (performance.now() - started) / 1000;
  if (tally.rejected > 0)
    io.stderr(
      `${tally.rejected} row(s) rejected: each is in ${job.rejectsPath} with its line and the reason`,
    );
  if (tally.statistics) io.stderr(`warning: ${tally.statistics}`);
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
