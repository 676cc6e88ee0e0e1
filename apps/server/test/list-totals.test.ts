import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeOnEachDatabase, startTestServer, type TestOrg, type TestServer } from './harness.ts';

// biome-ignore lint/suspicious/noExplicitAny: rows are the API's JSON
type Row = Record<string, any>;

const q = (tree: unknown) => encodeURIComponent(JSON.stringify(tree));

/**
 * A filtered list's total is counted once per state of the organization's records (docs/api/query.md,
 * "Counted once"): asked again unchanged it is read back, and every write of any kind that changes what
 * the filter keeps answers the new count at once. Each total here is compared with a count made in SQL.
 */
describeOnEachDatabase(
  (label) => `filtered totals, counted once, on ${label}`,
  (driver) => {
    let s: TestServer;
    let org: TestOrg;
    let pipelineId: string;
    let stages: Row[];
    const created: string[] = [];

    const api = (path: string, init: { method?: string; json?: unknown } = {}) =>
      s.api(path, { ...init, key: org.apiKey });
    const totalOf = async (tree: unknown) => {
      const res = await api(`/deals?limit=1&filter=${q(tree)}`);
      expect(res.status, res.text).toBe(200);
      return res.body.meta.total as number;
    };
    /** Places committed writes in the sync order (a read of the feed does), as the webhook worker does. */
    const place = async () => expect((await api('/events?limit=1')).status).toBe(200);
    const counted = async (where: string, params: unknown[] = []) => {
      const [row] = await s.sql<{ n: string }>(
        `select count(*) as n from deals d join pipeline_stages st on st.id = d.stage_id
          where d.org_id = ? and ${where}`,
        [org.orgId, ...params],
      );
      return Number(row?.n);
    };

    const BIG = { field: 'value', op: 'gte', value: 50_000 };
    const stageNamed = (name: string) => ({ field: 'stage_name', op: 'eq', value: name });
    const RETAIL = { field: 'company.industry', op: 'eq', value: 'Retail' };

    beforeAll(async () => {
      s = await startTestServer(driver);
      org = await s.newOrg('totals');
      const pipelines = await api('/pipelines');
      pipelineId = pipelines.body.data[0].id;
      stages = pipelines.body.data[0].stages;
      for (let i = 0; i < 12; i++) {
        const made = await api('/deals', {
          method: 'POST',
          json: { title: `Deal ${i}`, value: 10_000 * i, stage_id: stages[i % 2]?.id },
        });
        expect(made.status, made.text).toBe(201);
        created.push(made.body.data.id);
      }
    });
    afterAll(() => s?.stop());

    it('answers the same total asked again, and the new one after each kind of write', async () => {
      const check = async () => {
        await place();
        // Twice: the second is read back when nothing changed, and must still be the count.
        for (let i = 0; i < 2; i++) {
          expect(await totalOf(BIG)).toBe(await counted('d.value >= 50000'));
          expect(await totalOf(stageNamed('Renamed'))).toBe(await counted(`st.name = 'Renamed'`));
        }
      };
      await check();
      // A deal created, changed into and out of the filter, deleted.
      const made = await api('/deals', { method: 'POST', json: { title: 'New', value: 90_000 } });
      expect(made.status).toBe(201);
      await check();
      expect((await api(`/deals/${made.body.data.id}`, { method: 'PATCH', json: { value: 1 } })).status).toBe(
        200,
      );
      await check();
      expect((await api(`/deals/${created[7]}`, { method: 'DELETE' })).status).toBe(200);
      await check();
      // A batch, then a stage renamed under its deals (a write of the stage, not of a deal).
      const batch = await api('/deals/batch', {
        method: 'POST',
        json: { items: [60_000, 70_000, 80_000].map((value) => ({ title: `B ${value}`, value })) },
      });
      expect(batch.status, batch.text).toBeLessThan(300);
      await check();
      const renamed = await api(`/pipelines/${pipelineId}/stages/${stages[1]?.id}`, {
        method: 'PATCH',
        json: { name: 'Renamed' },
      });
      expect(renamed.status, renamed.text).toBe(200);
      await check();
      expect(await totalOf(stageNamed('Renamed'))).toBe(5); // stage 1's six deals, one of them deleted
    });

    it('counts a filter on related records each time (their links are not in the sync order)', async () => {
      const company = await api('/companies', { method: 'POST', json: { name: 'Shop', industry: 'Retail' } });
      expect(company.status, company.text).toBe(201);
      expect(await totalOf(RETAIL)).toBe(0);
      const linked = await api(`/deals/${created[0]}`, {
        method: 'PATCH',
        json: { company_id: company.body.data.id },
      });
      expect(linked.status, linked.text).toBe(200);
      await place();
      expect(await totalOf(RETAIL)).toBe(1);
      // The company's own change is a record written: the deal's filter on it sees it.
      expect(
        (await api(`/companies/${company.body.data.id}`, { method: 'PATCH', json: { industry: 'Food' } }))
          .status,
      ).toBe(200);
      await place();
      expect(await totalOf(RETAIL)).toBe(0);
    });

    it('never answers a total older than the read, with writers beside it', async () => {
      let writing = true;
      const writer = (async () => {
        for (let i = 0; writing; i++) {
          const made = await api('/deals', { method: 'POST', json: { title: `W ${i}`, value: 100_000 } });
          expect(made.status).toBe(201);
          if (i % 3 === 0) await place();
        }
      })();
      const stop = Date.now() + 2_000;
      let reads = 0;
      while (Date.now() < stop) {
        const before = await counted('d.value >= 50000');
        const total = await totalOf(BIG);
        const after = await counted('d.value >= 50000');
        // Only creates: a total counted during the read lies between the counts before and after it.
        expect(total).toBeGreaterThanOrEqual(before);
        expect(total).toBeLessThanOrEqual(after);
        reads++;
      }
      writing = false;
      await writer;
      await place();
      expect(await totalOf(BIG)).toBe(await counted('d.value >= 50000'));
      expect(reads).toBeGreaterThan(5);
    });
  },
);
