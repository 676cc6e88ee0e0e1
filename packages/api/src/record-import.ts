import { type EntityManager, savepoint, transaction } from '@crm/db';
import type { z } from 'zod';
import { lockUpsertValues, type UpsertResult, upsertValue } from './batch.ts';
import type { AuthedContext } from './context.ts';
import { ApiError, describeZodIssues, toApiError } from './errors.ts';
import { createActivity } from './features/activities/activities.service.ts';
import { ActivityCreateInput } from './features/activities/activity.schemas.ts';
import { createCompany, updateCompany } from './features/companies/companies.service.ts';
import { CompanyCreateInput } from './features/companies/company.schemas.ts';
import { ContactCreateInput } from './features/contacts/contact.schemas.ts';
import { createContact, updateContact } from './features/contacts/contacts.service.ts';
import type { CustomObject } from './features/custom-fields/custom-field.schemas.ts';
import { holderOf, upsertField } from './features/custom-fields/custom-fields.service.ts';
import type { FieldRule } from './features/custom-fields/custom-values.ts';
import {
  describeRanges,
  IMPORT_CHUNK,
  type ImportProgress,
  ImportStopped,
  RETRYABLE,
  type RejectedRow,
  type SourceRow,
} from './features/deals/deal-import.ts';
import { scopeToOrg } from './org-scope.ts';

/** What `crm import --object` takes besides deals, each row the body of its single create. */
export const IMPORT_OBJECTS = ['deals', 'contacts', 'companies', 'activities'] as const;
export type ImportObject = (typeof IMPORT_OBJECTS)[number];

interface RecordImport<I> {
  row: z.ZodType<I>;
  create(ctx: AuthedContext, tx: EntityManager, row: I): Promise<unknown>;
  /** Absent for an object without custom fields, which cannot be upserted. */
  update?(tx: EntityManager, id: string, row: I): Promise<unknown>;
}

/** Each object's row and writes: the single create's schema and code, so an import is a create. */
const RECORDS: Record<Exclude<ImportObject, 'deals'>, RecordImport<never>> = {
  contacts: {
    row: ContactCreateInput,
    create: (ctx, tx, row: ContactCreateInput) => namingFields(createContact(ctx, tx, row)),
    // A PATCH does not move a contact: an updated one keeps its deal (as the batch upsert).
    update: (tx, id, { deal_id: _deal, ...row }: ContactCreateInput) => updateContact(tx, id, row),
  } as RecordImport<ContactCreateInput> as RecordImport<never>,
  companies: {
    row: CompanyCreateInput,
    create: (ctx, tx, row: CompanyCreateInput) => createCompany(ctx, tx, row),
    update: (tx, id, row: CompanyCreateInput) => updateCompany(tx, id, row),
  } as RecordImport<CompanyCreateInput> as RecordImport<never>,
  activities: {
    row: ActivityCreateInput,
    create: (ctx, tx, row: ActivityCreateInput) => createActivity(ctx, tx, row),
  } as RecordImport<ActivityCreateInput> as RecordImport<never>,
};

/** The creates' 404s ("Deal not found") as a reject names them: by the row's field. */
const FIELD_OF_MISSING: Record<string, string> = { Deal: 'deal_id', Company: 'company_id' };

async function namingFields<T>(write: Promise<T>): Promise<T> {
  try {
    return await write;
  } catch (err) {
    const what =
      err instanceof ApiError && err.code === 'not_found'
        ? /^(\w+) not found$/.exec(err.message)?.[1]
        : undefined;
    const field = what ? FIELD_OF_MISSING[what] : undefined;
    if (!field) throw err;
    throw new ApiError('not_found', `${field}: no such ${what?.toLowerCase()} in the organization`);
  }
}

/** Whether `crm import --object <object> --upsert-on` can be asked: objects with custom fields. */
export const upsertable = (object: ImportObject): object is CustomObject =>
  object === 'deals' || RECORDS[object].update !== undefined;

/** The unique field an import upserts on (a 400-like error naming the fields there are, else). */
export function importUpsertField(em: EntityManager, orgId: string, object: CustomObject, key: string) {
  return upsertField(scopeToOrg(em.fork(), orgId), object, key);
}

/** A row of a chunk: valid (`row`), or rejected by its schema (`error`), told in its place in the file. */
type Parsed = { line: number; value: unknown; row?: unknown; error?: string };

/**
 * Loads companies, contacts or activities (docs/cli.md: Import). Each row is validated as its single
 * create validates its body (a row that fails is rejected with its line and the reason, the others go
 * on), then written by that create's own code (its event, its links checked), 1,000 rows a transaction:
 * a row the database refuses (a domain another company holds, a link to a deal that is not the
 * organization's) is rolled back to its savepoint and rejected with the create's message, and the chunk's
 * other rows commit together. With `upsertOn`, a row whose value of that unique field a record holds
 * changes that record (the PATCH's code); the chunk locks its values first, as a batch upsert does.
 */
export async function importRecords(
  em: EntityManager,
  orgId: string,
  object: Exclude<ImportObject, 'deals'>,
  rows: AsyncIterable<SourceRow>,
  handlers: { rejected(row: RejectedRow): void | Promise<void>; progress?(p: ImportProgress): void },
  upsertOn?: FieldRule,
): Promise<ImportProgress & { created: number; updated: number; statistics: null }> {
  const spec = RECORDS[object];
  if (upsertOn && !spec.update) throw new Error(`${object} have no custom fields to upsert on`);
  const scoped = scopeToOrg(em.fork(), orgId);
  // The creates read only the organization from their caller's context.
  const ctx = { principal: { orgId } } as unknown as AuthedContext;
  const tally = { read: 0, imported: 0, rejected: 0, created: 0, updated: 0 };
  const committed: Array<[number, number]> = [];
  let chunk: Parsed[] = [];
  const flush = async () => {
    const rows = chunk;
    chunk = [];
    const outcome = await writeChunk(
      scoped,
      rows,
      async (tx, { row }) => {
        if (upsertOn && spec.update) {
          const value = upsertValue(upsertOn, row as never);
          const holder =
            value === undefined ? undefined : await holderOf(tx, object as CustomObject, upsertOn.key, value);
          if (holder) {
            await spec.update(tx, holder, row as never);
            return 'updated';
          }
        }
        await spec.create(ctx, tx, row as never);
        return 'created';
      },
      upsertOn &&
        ((tx) =>
          lockUpsertValues(
            tx,
            object as CustomObject,
            upsertOn,
            rows.flatMap((r) => (r.row === undefined ? [] : [r.row as never])),
          )),
    );
    for (const r of outcome.rejected) {
      tally.rejected++;
      await handlers.rejected(r);
    }
    tally.created += outcome.created;
    tally.updated += outcome.updated;
    tally.imported += outcome.created + outcome.updated;
    if (rows.length > 0) committed.push([rows[0]?.line ?? 0, rows.at(-1)?.line ?? 0]);
    try {
      handlers.progress?.({ read: tally.read, imported: tally.imported, rejected: tally.rejected });
    } catch {
      // a progress bar that fails to draw stops nothing
    }
  };
  try {
    for await (const { line, value, unreadable } of rows) {
      tally.read++;
      const parsed = spec.row.safeParse(unreadable === undefined ? value : undefined);
      chunk.push(
        parsed.success
          ? { line, value, row: parsed.data }
          : { line, value, error: unreadable ?? describeZodIssues(parsed.error.issues) },
      );
      if (chunk.length >= IMPORT_CHUNK) await flush();
    }
    if (chunk.length > 0) await flush();
  } catch (err) {
    throw new ImportStopped(
      err,
      { read: tally.read, imported: tally.imported, rejected: tally.rejected },
      describeRanges(committed),
      object,
    );
  }
  return { ...tally, statistics: null };
}

/**
 * One chunk in one transaction, each row in a savepoint of it: a row its write refuses with a 4xx is
 * rejected (undone alone), any other failure fails the chunk. Retried whole on a deadlock; the rejects are
 * told only once the chunk has committed, so a retry does not tell them twice.
 */
async function writeChunk(
  em: EntityManager,
  rows: Parsed[],
  write: (tx: EntityManager, row: Parsed) => Promise<UpsertResult>,
  prepare?: (tx: EntityManager) => Promise<void>,
): Promise<{ created: number; updated: number; rejected: RejectedRow[] }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transaction(em, async (tx) => {
        await prepare?.(tx);
        const outcome = { created: 0, updated: 0, rejected: [] as RejectedRow[] };
        for (const row of rows) {
          if (row.error !== undefined) {
            outcome.rejected.push({ line: row.line, error: row.error, row: row.value });
            continue;
          }
          try {
            outcome[await savepoint(tx, (sp) => write(sp, row))]++;
            // A unit of work holding the chunk's records would compare them all at each flush (see writeChunk of deal-import.ts).
            tx.clear();
          } catch (err) {
            const failure = toApiError(err);
            if (failure.status >= 500) throw err;
            outcome.rejected.push({ line: row.line, error: failure.message, row: row.value });
          }
        }
        return outcome;
      });
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (attempt >= 3 || !code || !RETRYABLE.has(code)) throw err;
    }
  }
}
