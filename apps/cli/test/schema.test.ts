import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestOrg, type TestServer } from '../../server/test/harness.ts';
import { crm } from './crm.ts';

const CLIENT = fileURLToPath(new URL('../../../packages/client/src/index.ts', import.meta.url));

/**
 * An app's code using @crm/client with the declaration `crm schema types` printed: what must compile, and
 * (each `@ts-expect-error`) what must not; an unused `@ts-expect-error` is an error too.
 */
const APP = `import { createCrmClient, createCrmRestClient, type Filter } from '@crm/client';
import type { OrgFields } from './crm-fields.ts';

const crm = createCrmClient<OrgFields>({ baseUrl: 'http://localhost:3000', apiKey: 'ck_x' });
const rest = createCrmRestClient<OrgFields>({ baseUrl: 'http://localhost:3000', apiKey: 'ck_x' });

export async function app(id: string) {
  const { data } = await crm.deals.get.query({ id });
  const arr: number | undefined = data.deal.custom.arr;
  const region: 'emea' | 'apac' | undefined = data.deal.custom.region;
  const tags: Array<'vip' | 'partner' | 'old'> | undefined = data.deal.custom.tags;
  // @ts-expect-error arr is a number
  const wrong: string | undefined = data.deal.custom.arr;
  await crm.deals.create.mutate({ title: 'Acme', custom: { arr: 120000, region: 'emea', tags: ['vip'] } });
  // @ts-expect-error a custom number given a string
  await crm.deals.create.mutate({ title: 'Acme', custom: { arr: '120000' } });
  // @ts-expect-error an archived option is read, no longer written
  await crm.deals.create.mutate({ title: 'Acme', custom: { tags: ['old'] } });
  // @ts-expect-error an archived field takes no more values
  await crm.deals.update.mutate({ id, custom: { legacy_code: 'L-2' } });
  await crm.companies.create.mutate({ name: 'Acme', custom: { segment: 'smb' } });
  // @ts-expect-error segment is required on companies
  await crm.companies.create.mutate({ name: 'Acme', custom: {} });
  const filter: Filter<OrgFields, 'deals'> = {
    and: [
      { field: 'custom.arr', op: 'gte', value: 1000 },
      { field: 'custom.region', op: 'in', value: ['emea'] },
      { field: 'stakeholders.custom.seniority', op: 'gt', value: 2 },
      { field: 'company.custom.segment', op: 'eq', value: 'enterprise' },
    ],
  };
  await crm.deals.query.mutate({ filter });
  // @ts-expect-error a misspelled custom field
  await crm.deals.query.mutate({ filter: { field: 'custom.regoin', op: 'eq', value: 'emea' } });
  // @ts-expect-error a custom number compared with a string
  await rest.POST('/deals/query', { body: { filter: { field: 'custom.arr', op: 'gt', value: '1' } } });
  return [arr, region, tags, wrong];
}
`;

/** The type checker's complaints about `dir`'s app.ts, which imports the client's source as '@crm/client'. */
function compile(dir: string): string[] {
  const program = ts.createProgram([path.join(dir, 'app.ts')], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    types: [],
    paths: { '@crm/client': [CLIENT] },
  });
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => `${d.file?.fileName ?? ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

/** The first database's declaration, compiled; the second's must be the same text (but for the org id). */
let compiledDeclaration: string | undefined;

/**
 * The custom fields kept as a file in a repository: `crm schema export`, edited, `crm schema plan`, then
 * `crm schema apply`; and the same plan and apply over HTTP. Beside a running server, as `crm import`.
 */
for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`crm schema on ${label}`, () => {
    let s: TestServer;
    let dir: string;
    let org: TestOrg;
    let dbEnv: Record<string, string>;
    beforeAll(async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'crm-schema-'));
      s = await startTestServer(driver, driver === 'pglite' ? { CRM_DATA_DIR: path.join(dir, 'data') } : {});
      dbEnv =
        driver === 'pglite'
          ? { CRM_DATA_DIR: path.join(dir, 'data') }
          : { DATABASE_URL: s.env.DATABASE_URL as string };
      org = await s.newOrg('Schema as code');
    }, 60_000);
    afterAll(async () => {
      await s?.stop();
      await rm(dir, { recursive: true, force: true });
    });
    const schema = (...args: string[]) =>
      crm({ LOG_LEVEL: 'silent', ...dbEnv }, 'schema', ...args, '--org', org.orgId);
    const api = (p: string, json?: unknown) =>
      s.api(p, { key: org.apiKey, ...(json === undefined ? {} : { method: 'POST', json }) });

    it('export, plan, apply: a round trip through a file, every step or none', async () => {
      await api('/custom-fields/deals', { key: 'arr', type: 'number' });
      await api('/custom-fields/deals', { key: 'legacy_code', type: 'text' });
      await api('/deals', { title: 'Holds a legacy code', custom: { legacy_code: 'L-1' } });

      const exported = await schema('export');
      expect(exported.code, exported.stderr).toBe(0);
      const file = exported.lines[0] as {
        version: 1;
        objects: Record<string, Array<Record<string, unknown>>>;
      };
      expect(file).toEqual({
        version: 1,
        objects: {
          deals: [
            { key: 'arr', type: 'number', label: 'arr' },
            { key: 'legacy_code', type: 'text', label: 'legacy_code' },
          ],
          contacts: [],
          companies: [],
        },
      });

      // The repository's edit: a label, a new select, legacy_code gone; contacts left alone.
      const edited = {
        version: 1,
        objects: {
          deals: [
            { key: 'arr', type: 'number', label: 'ARR', validation: { min: 0 } },
            {
              key: 'region',
              type: 'select',
              indexed: true,
              options: [{ value: 'emea' }, { value: 'apac' }],
            },
          ],
        },
      };
      const at = path.join(dir, 'crm.schema.json');
      await writeFile(at, JSON.stringify(edited, null, 2));
      const plan = await schema('plan', at);
      expect(plan.code, plan.stderr).toBe(0);
      expect(plan.lines[0]).toEqual({
        steps: [
          {
            object: 'deals',
            key: 'arr',
            action: 'change',
            changes: { label: { from: 'arr', to: 'ARR' }, validation: { from: null, to: { min: 0 } } },
          },
          { object: 'deals', key: 'region', action: 'add', index: { action: 'build', records: 0 } },
          { object: 'deals', key: 'legacy_code', action: 'archive', records_with_values: 1 },
        ],
        applicable: true,
      });
      // The plan over HTTP is the same, and changed nothing.
      expect((await api('/custom-fields/plan', edited)).body.data).toEqual(plan.lines[0]);
      expect((await api('/custom-fields/deals')).body.data.map((f: { key: string }) => f.key)).toEqual([
        'arr',
        'legacy_code',
      ]);

      const applied = await schema('apply', at);
      expect(applied.code, applied.stderr).toBe(0);
      const fields = (await api('/custom-fields/deals')).body.data;
      expect(fields.map((f: { key: string; label: string }) => [f.key, f.label])).toEqual([
        ['arr', 'ARR'],
        ['region', 'region'],
      ]);
      expect(fields[1].indexed).toBe(true);
      // Applying again plans nothing; the export states the index.
      expect((await schema('plan', at)).lines[0]).toEqual({ steps: [], applicable: true });
      const exportedAgain = (await schema('export')).lines[0] as typeof file;
      expect(exportedAgain.objects.deals?.[1]).toEqual({
        key: 'region',
        type: 'select',
        label: 'region',
        indexed: true,
        options: [
          { value: 'emea', label: 'emea' },
          { value: 'apac', label: 'apac' },
        ],
      });
      // The archived field's value stays readable.
      const deal = (await api('/deals')).body.data[0];
      expect(deal.custom).toEqual({ legacy_code: 'L-1' });
    });

    it('the example schema file in docs/examples plans and applies on a new organization', async () => {
      const fresh = await s.newOrg('Example schema');
      const example = fileURLToPath(new URL('../../../docs/examples/crm.schema.json', import.meta.url));
      const run = (verb: string) =>
        crm({ LOG_LEVEL: 'silent', ...dbEnv }, 'schema', verb, example, '--org', fresh.orgId);
      const plan = await run('plan');
      expect(plan.code, plan.stderr).toBe(0);
      expect((plan.lines[0] as { applicable: boolean }).applicable).toBe(true);
      const applied = await run('apply');
      expect(applied.code, applied.stderr).toBe(0);
      expect((await run('plan')).lines[0]).toEqual({ steps: [], applicable: true });
      const deals = await s.api('/custom-fields/deals', { key: fresh.apiKey });
      expect(deals.body.data.map((f: { key: string }) => f.key)).toEqual([
        'arr',
        'region',
        'external_id',
        'decision_criteria',
        'renewal_date',
      ]);
    });

    it('a step the data forbids makes the plan not applicable; apply changes nothing and says why', async () => {
      await api('/deals', { title: 'No region yet' });
      await api('/deals', { title: 'Has an ARR', custom: { arr: 1200 } });
      const file = {
        version: 1,
        objects: {
          deals: [
            { key: 'arr', type: 'text', label: 'ARR' },
            { key: 'region', type: 'select', required: true, options: [{ value: 'emea' }] },
            { key: 'legacy_code', type: 'text' },
          ],
        },
      };
      const plan = (await api('/custom-fields/plan', file)).body.data;
      expect(plan.applicable).toBe(false);
      expect(
        plan.steps.map((s: { key: string; problem?: string }) => [s.key, s.problem?.split(':')[0]]),
      ).toEqual([
        ['arr', undefined],
        ['region', 'required'],
        ['legacy_code', 'legacy_code was archived; a key is never used again'],
      ]);
      // A type change is a convert step, with its dry run's counts.
      expect(plan.steps[0]).toEqual({
        object: 'deals',
        key: 'arr',
        action: 'convert',
        changes: { type: { from: 'number', to: 'text' }, validation: { from: { min: 0 }, to: null } },
        conversion: { records: 1, converted: 1, changed: 1, failed: 0, failures: [] },
      });
      const refused = await api('/custom-fields/apply', file);
      expect(refused.status).toBe(409);
      expect(refused.body.error).toMatch(/^objects\.deals\.region: required/);
      const at = path.join(dir, 'bad.schema.json');
      await writeFile(at, JSON.stringify(file));
      const cli = await schema('apply', at);
      expect(cli.code).toBe(1);
      expect(cli.stderr).toMatch(/objects\.deals\.region: required: 3 deals have no value for region/);
      expect((await api('/custom-fields/deals')).body.data.map((f: { key: string }) => f.key)).toEqual([
        'arr',
        'region',
      ]);
      // Without the broken steps, apply converts: arr is text and so is its value; back to number refuses
      // a value that is not one, naming it.
      await writeFile(at, JSON.stringify({ version: 1, objects: { deals: [file.objects.deals[0]] } }));
      const converted = await schema('apply', at);
      expect(converted.code, converted.stderr).toBe(0);
      expect((await api('/custom-fields/deals/arr')).body.data.type).toBe('text');
      const held = (await api('/deals?limit=50')).body.data.find(
        (d: { title: string }) => d.title === 'Has an ARR',
      );
      expect(held.custom).toEqual({ arr: '1200' });
      await s.api(`/deals/${held.id}`, {
        key: org.apiKey,
        method: 'PATCH',
        json: { custom: { arr: 'lots' } },
      });
      await writeFile(
        at,
        JSON.stringify({ version: 1, objects: { deals: [{ key: 'arr', type: 'number', label: 'ARR' }] } }),
      );
      const back = await schema('apply', at);
      expect(back.code).toBe(1);
      expect(back.stderr).toContain(
        `objects.deals.arr: 1 values do not convert to number (first: ${held.id} "lots"`,
      );
      // A file that is not a schema file is named as such.
      await writeFile(at, JSON.stringify({ version: 2, objects: {} }));
      const wrong = await schema('plan', at);
      expect(wrong.code).toBe(1);
      expect(wrong.stderr).toMatch(/version: Invalid input: expected 1/);
    });

    it('types: a TypeScript declaration of the fields that the typed client compiles an app with', async () => {
      // An organization of its own (the tests above convert arr and archive region): one field of each kind.
      const typed = await s.newOrg('Typed client');
      const call = (p: string, method: string, json?: unknown) =>
        s.api(p, { key: typed.apiKey, method, ...(json === undefined ? {} : { json }) });
      await call('/custom-fields/deals', 'POST', { key: 'arr', type: 'number' });
      await call('/custom-fields/deals', 'POST', {
        key: 'region',
        type: 'select',
        options: [{ value: 'emea' }, { value: 'apac' }],
      });
      await call('/custom-fields/deals', 'POST', { key: 'legacy_code', type: 'text' });
      expect((await call('/custom-fields/deals/legacy_code', 'DELETE')).status).toBe(200);
      await call('/custom-fields/deals', 'POST', {
        key: 'tags',
        label: 'Tags */ with a comment end',
        type: 'multi_select',
        options: [{ value: 'vip' }, { value: 'partner' }, { value: 'old' }],
      });
      const patched = await call('/custom-fields/deals/tags', 'PATCH', {
        options: [{ value: 'vip' }, { value: 'partner' }],
      });
      expect(patched.status).toBe(200);
      await call('/custom-fields/contacts', 'POST', { key: 'seniority', type: 'number' });
      await call('/custom-fields/companies', 'POST', {
        key: 'segment',
        type: 'select',
        required: true,
        options: [{ value: 'smb' }, { value: 'enterprise' }],
      });

      const types = await crm({ LOG_LEVEL: 'silent', ...dbEnv }, 'schema', 'types', '--org', typed.orgId);
      expect(types.code, types.stderr).toBe(0);
      const declaration = types.stdout;
      expect(declaration).toContain('export type OrgFields = {');
      expect(declaration).toContain('    arr: { type: "number" };');
      expect(declaration).toContain('    region: { type: "select"; options: "emea" | "apac" };');
      expect(declaration).toContain('    legacy_code: { type: "text"; archived: true };');
      expect(declaration).toContain(
        '    tags: { type: "multi_select"; options: "vip" | "partner"; archivedOptions: "old" };',
      );
      expect(declaration).toContain('/** Tags *\\/ with a comment end: multi_select */');
      expect(declaration).toContain(
        '    segment: { type: "select"; required: true; options: "smb" | "enterprise" };',
      );

      const own = declaration.replaceAll(typed.orgId, '<org>');
      if (compiledDeclaration !== undefined) {
        expect(own).toBe(compiledDeclaration);
        return;
      }
      await writeFile(path.join(dir, 'crm-fields.ts'), declaration);
      await writeFile(path.join(dir, 'app.ts'), APP);
      expect(compile(dir)).toEqual([]);
      compiledDeclaration = own;
    });
  });
}
