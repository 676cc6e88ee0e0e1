import { type FileHandle, open } from 'node:fs/promises';
import type { EntityManager } from '@crm/db';
import { ApiError } from '../../errors.ts';
import { ImportStopped, importDeals } from '../../features/deals/deal-import.ts';
import { type ImportObject, importRecords, importUpsertField, upsertable } from '../../record-import.ts';
import { organizationExists } from '../organizations.ts';
import { CliError } from './errors.ts';
import { openImportFile } from './import-file.ts';
import type { Io } from './io.ts';

/**
 * `crm import <file> --org <org_id> [--object deals|contacts|companies|activities] [--upsert-on <key>]`:
 * streams the file into the organization (see `importDeals`, `importRecords`), draws the progress (bytes
 * of the file read, rows imported and rejected) on the terminal, writes each rejected row to the rejects
 * file as one JSON line (`{"line", "error", "row"}`), and answers a summary (how many rows were created
 * and how many updated an existing record).
 */
export async function runImport(
  em: EntityManager,
  job: {
    file: string;
    orgId: string;
    rejectsPath: string;
    object?: ImportObject;
    upsertOn?: string | undefined;
  },
  io: Io,
): Promise<Record<string, unknown>> {
  if (!(await organizationExists(em, job.orgId)))
    throw new CliError(`organization ${job.orgId} does not exist`);
  const object = job.object ?? 'deals';
  let rule: Awaited<ReturnType<typeof importUpsertField>> | undefined;
  if (job.upsertOn !== undefined && upsertable(object))
    try {
      rule = await importUpsertField(em, job.orgId, object, job.upsertOn);
    } catch (err) {
      if (err instanceof ApiError) throw new CliError(`--${err.message.replace('_', '-')}`);
      throw err;
    }
  const file = await openImportFile(job.file, object);
  const started = performance.now();
  let rejects: FileHandle | undefined;
  io.progress?.start(file.totalBytes);
  let tally: Awaited<ReturnType<typeof importDeals>>;
  const handlers: Parameters<typeof importDeals>[3] = {
    async rejected(row) {
      try {
        rejects ??= await open(job.rejectsPath, 'w');
        await rejects.write(`${JSON.stringify(row)}\n`);
      } catch (err) {
        throw new CliError(`cannot write the rejects file ${job.rejectsPath}: ${(err as Error).message}`);
      }
    },
    progress: (p) => io.progress?.update(file.bytesRead(), p),
  };
  try {
    tally =
      object === 'deals'
        ? await importDeals(em, job.orgId, file.rows, handlers, rule)
        : await importRecords(em, job.orgId, object, file.rows, handlers, rule);
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
    object,
    read: tally.read,
    imported: tally.imported,
    created: tally.created,
    updated: tally.updated,
    rejected: tally.rejected,
    rejects_file: tally.rejected > 0 ? job.rejectsPath : null,
    seconds: Math.round(seconds * 10) / 10,
    rows_per_second: Math.round(tally.imported / Math.max(seconds, 0.001)),
  };
}
