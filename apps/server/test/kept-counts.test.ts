import { deleteOrganization, KEPT_AGGREGATES } from '@crm/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestOrg, type TestServer } from './harness.ts';

const LIFECYCLES = ['evaluation', 'churn_risk', null] as const;

/**
 * How many rounds each of the eight concurrent writers makes (a create and one of five other writes a
 * round): 12 in the suite, for `npm test`'s 5 minutes; KEPT_TEST_ROUNDS=25 (or more) for a longer run.
 */
const ROUNDS = Number(process.env.KEPT_TEST_ROUNDS ?? 12);

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`kept counts and cursors on ${label}`, () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer(driver);
    });
    afterAll(async () => {
      await s?.stop();
    });

    /** meta.total of each filter the API offers against count(*) of the rows themselves. */
    async function expectExactTotals(org: TestOrg) {
      const [pipeline] = await s.sql<{ id: string }>(
        'select id from pipelines where org_id = ? and is_default',
        [org.orgId],
      );
      const pipelineId = pipeline?.id as string;
      const filters: Array<[string, string, unknown[]]> = [
        ['', '', []],
        [`pipeline_id=${pipelineId}`, 'and pipeline_id = ?', [pipelineId]],
      ];
      for (const stage of ['lead', 'opportunity', 'customer', 'lost', 'evaluation', 'churn_risk'])
        filters.push([`lifecycle_stage=${stage}`, 'and lifecycle_stage = ?', [stage]]);
      for (const [query, where, params] of filters) {
        const res = await s.api(`/deals?limit=1&${query}`, { key: org.apiKey });
        const [row] = await s.sql<{ n: string | number }>(
          `select count(*) as n from deals where org_id = ? ${where}`,
          [org.orgId, ...params],
        );
        expect(res.body.meta.total, query || 'no filter').toBe(Number(row?.n));
      }
      const contacts = await s.api('/contacts?limit=1', { key: org.apiKey });
      const [c] = await s.sql<{ n: string | number }>('select count(*) as n from contacts where org_id = ?', [
        org.orgId,
      ]);
      expect(contacts.body.meta.total).toBe(Number(c?.n));
    }

    /**
     * The signal and close sums against the rows: every activity and creation classified one by one (all of
     * this test's rows are recent), every closed deal's facts row present with its activity count, the day
     * sums equal to their facts, each deal's negative stakeholders counted.
     */
    async function expectExactAggregates(org: TestOrg) {
      const [signals] = await s.sql<Record<string, string | number>>(
        `select (select coalesce(sum(positive), 0) from activity_signal_hours where org_id = ?) as kept_positive,
                (select coalesce(sum(negative), 0) from activity_signal_hours where org_id = ?) as kept_negative,
                (select coalesce(sum(competitor), 0) from activity_signal_hours where org_id = ?) as kept_competitor,
                count(*) filter (where x.s & 1 <> 0) as positive, count(*) filter (where x.s & 2 <> 0) as negative,
                count(*) filter (where x.s & 4 <> 0) as competitor
           from (select crm_activity_signals(org_id, type, description, changes) as s from activities where org_id = ?
                 union all select crm_text_signals(notes) from deals where org_id = ?) x`,
        [org.orgId, org.orgId, org.orgId, org.orgId, org.orgId],
      );
      for (const kind of ['positive', 'negative', 'competitor'])
        expect(Number(signals?.[`kept_${kind}`]), kind).toBe(Number(signals?.[kind]));
      expect(Number(signals?.positive) * Number(signals?.negative)).toBeGreaterThan(0);
      const wrong = await s.sql(
        `select d.id from deals d join pipeline_stages st on st.id = d.stage_id
           left join deal_closes f on f.deal_id = d.id
          where d.org_id = ? and ((st.stage_type <> 'open') <> (f.deal_id is not null)
             or f.activities <> (select count(*) from activities a where a.deal_id = d.id and a.type <> 'deal_analyzed')
             or d.negative_stakeholders <> (select count(*) from contacts c where c.deal_id = d.id
                                              and (c.sentiment = 'negative' or c.role_type = 'blocker')))`,
        [org.orgId],
      );
      expect(wrong).toEqual([]);
      const [sums] = await s.sql<Record<string, string | number>>(
        `select (select coalesce(sum(deals), 0) from deal_close_days where org_id = ?) as days,
                (select coalesce(sum(activities), 0) from deal_close_days where org_id = ?) as day_activities,
                (select count(*) from deal_closes where org_id = ?) as closes,
                (select coalesce(sum(activities), 0) from deal_closes where org_id = ?) as activities`,
        [org.orgId, org.orgId, org.orgId, org.orgId],
      );
      expect([Number(sums?.days), Number(sums?.day_activities)]).toEqual([
        Number(sums?.closes),
        Number(sums?.activities),
      ]);
    }

    it('stay exact under concurrent creates, deletes, stage moves and lifecycle changes', async () => {
      const org = await s.newOrg('Counted org');
      const stages = (await s.api('/pipeline/stages', { key: org.apiKey })).body.data as Array<{
        id: string;
      }>;
      const writer = async (w: number) => {
        const mine: string[] = [];
        for (let i = 0; i < ROUNDS; i++) {
          const created = await s.api('/deals', {
            method: 'POST',
            key: org.apiKey,
            json: { title: `c${w}-${i}`, ...(i % 3 === 0 ? { notes: 'Great start, a rival in play' } : {}) },
          });
          expect(created.status).toBe(201);
          const id = created.body.data.id as string;
          mine.push(id);
          const op = (w + i) % 5;
          if (op === 0) {
            await s.api(`/deals/${id}`, {
              method: 'PATCH',
              key: org.apiKey,
              json: { stage_id: stages[(w + i) % stages.length]?.id },
            });
          } else if (op === 1) {
            await s.api(`/deals/${id}`, {
              method: 'PATCH',
              key: org.apiKey,
              json: { lifecycle_stage: LIFECYCLES[i % LIFECYCLES.length] },
            });
          } else if (op === 2 && mine.length > 1) {
            const victim = mine.splice(0, 1)[0] as string;
            expect((await s.api(`/deals/${victim}`, { method: 'DELETE', key: org.apiKey })).status).toBe(200);
          } else if (op === 4) {
            // A stakeholder of another writer's deal turns against it while others close or delete that deal.
            const other = await s.api(`/deals?limit=1&offset=${(i * 7) % 20}`, { key: org.apiKey });
            const target = other.body.data[0]?.id as string | undefined;
            if (target) {
              const added = await s.api('/contacts', {
                method: 'POST',
                key: org.apiKey,
                json: { name: `q${w}-${i}`, deal_id: target },
              });
              expect([201, 400, 404], added.text).toContain(added.status);
              if (added.status === 201) {
                const turned = await s.api(`/contacts/${added.body.data.id}`, {
                  method: 'PATCH',
                  key: org.apiKey,
                  json: { sentiment: i % 2 ? 'negative' : 'positive' },
                });
                expect([200, 404], turned.text).toContain(turned.status);
              }
            }
          } else if (op === 3) {
            await s.api('/contacts', {
              method: 'POST',
              key: org.apiKey,
              json: { name: `p${w}-${i}`, deal_id: id, role_type: i % 2 ? 'blocker' : 'champion' },
            });
            // Writers also close deals another writer created, to race on the same sums.
            const other = await s.api(`/deals?limit=1&offset=${i}`, { key: org.apiKey });
            const target = other.body.data[0]?.id as string | undefined;
            if (target) {
              const closed = await s.api(`/deals/${target}`, {
                method: 'PATCH',
                key: org.apiKey,
                json: { stage_id: stages[4 + (i % 2)]?.id },
              });
              // 404: another writer deleted it meanwhile.
              expect([200, 404], closed.text).toContain(closed.status);
            }
          }
        }
      };
      await Promise.all(Array.from({ length: 8 }, (_, w) => writer(w)));
      await expectExactTotals(org);
      await expectExactAggregates(org);
    }, 120_000);

    it('count rows written outside the API too, and forget a deleted organization', async () => {
      const org = await s.newOrg('Operator org');
      const [pipeline] = await s.sql<{ id: string; stage: string }>(
        `select p.id, (select s.id from pipeline_stages s where s.pipeline_id = p.id order by position limit 1) as stage
           from pipelines p where p.org_id = ?`,
        [org.orgId],
      );
      await s.sql(
        `insert into deals (id, org_id, title, currency, lifecycle_stage, lifecycle_stage_manual, pipeline_id, stage_id, created_at)
         select gen_random_uuid(), ?, 'psql ' || g, 'USD', 'lead', false, ?, ?, now() from generate_series(1, 40) g`,
        [org.orgId, pipeline?.id, pipeline?.stage],
      );
      await s.sql(
        "update deals set lifecycle_stage = 'evaluation' where org_id = ? and title like 'psql 1%'",
        [org.orgId],
      );
      await s.sql("delete from deals where org_id = ? and title like 'psql 2%'", [org.orgId]);
      await expectExactTotals(org);
      // A won deal with a telling note fills the signal and close sums too.
      const won = await s.api('/deals', {
        method: 'POST',
        key: org.apiKey,
        json: { title: 'Won in psql org', notes: 'Great news, budget approved' },
      });
      expect(won.status, won.text).toBe(201);
      const [closed] = await s.sql<{ id: string }>(
        "select id from pipeline_stages where org_id = ? and stage_type = 'won'",
        [org.orgId],
      );
      const move = await s.api(`/deals/${won.body.data.id}`, {
        method: 'PATCH',
        key: org.apiKey,
        json: { stage_id: closed?.id },
      });
      expect(move.status, move.text).toBe(200);
      const company = await s.api('/companies', {
        method: 'POST',
        key: org.apiKey,
        json: { name: 'Counted' },
      });
      expect(company.status, company.text).toBe(201);
      for (const table of KEPT_AGGREGATES.filter((t) => t !== 'contact_counts'))
        expect(await s.sql(`select * from ${table} where org_id = ?`, [org.orgId]), table).not.toEqual([]);
      expect(await deleteOrganization(s.running.db.orm.em.fork(), org.orgId)).toBe(true);
      for (const table of [...KEPT_AGGREGATES, 'deal_closes'])
        expect(await s.sql(`select * from ${table} where org_id = ?`, [org.orgId]), table).toEqual([]);
    });

    it('cursor pages cover every row exactly once while rows are added', async () => {
      const org = await s.newOrg('Cursor org');
      for (let i = 0; i < 30; i++)
        await s.api('/deals', { method: 'POST', key: org.apiKey, json: { title: `before ${i}` } });
      const existing = (
        await s.sql<{ id: string }>(
          'select id from deals where org_id = ? order by created_at desc, id desc',
          [org.orgId],
        )
      ).map((r) => r.id);
      const seen: string[] = [];
      let after: string | null = null;
      let pages = 0;
      do {
        const res = await s.api(`/deals?limit=7${after ? `&after=${after}` : ''}`, { key: org.apiKey });
        expect(res.status).toBe(200);
        seen.push(...res.body.data.map((d: { id: string }) => d.id));
        after = res.body.meta.next_cursor;
        pages++;
        // New deals arrive while paging: they are newer than the cursor, so they do not shift the pages.
        await s.api('/deals', { method: 'POST', key: org.apiKey, json: { title: `during ${pages}` } });
      } while (after);
      expect(seen).toEqual(existing);
      expect(pages).toBe(Math.ceil(30 / 7));

      const contactsSeen: string[] = [];
      const deal = (await s.api('/deals?limit=1', { key: org.apiKey })).body.data[0].id as string;
      for (let i = 0; i < 12; i++)
        await s.api('/contacts', {
          method: 'POST',
          key: org.apiKey,
          json: { name: `Person ${i}`, deal_id: deal },
        });
      let cursor: string | null = null;
      do {
        const res = await s.api(`/contacts?limit=5${cursor ? `&after=${cursor}` : ''}`, { key: org.apiKey });
        contactsSeen.push(...res.body.data.map((c: { id: string }) => c.id));
        cursor = res.body.meta.next_cursor;
      } while (cursor);
      expect(new Set(contactsSeen).size).toBe(12);
      expect(contactsSeen).toHaveLength(12);

      // Rows of one statement share their timestamp to the microsecond: the cursor still covers each once.
      await s.sql(
        `insert into contacts (id, org_id, deal_id, name, role_type, created_at)
         select gen_random_uuid(), ?, ?, 'Same instant ' || g, 'unknown', now() from generate_series(1, 30) g`,
        [org.orgId, deal],
      );
      const sameInstant: string[] = [];
      cursor = null;
      do {
        const res = await s.api(`/contacts?limit=7${cursor ? `&after=${cursor}` : ''}`, { key: org.apiKey });
        sameInstant.push(...res.body.data.map((c: { id: string }) => c.id));
        cursor = res.body.meta.next_cursor;
      } while (cursor);
      expect(sameInstant).toHaveLength(42);
      expect(new Set(sameInstant).size).toBe(42);

      const both = await s.api(`/deals?after=${deal}&offset=5`, { key: org.apiKey });
      expect(both.status).toBe(400);
      expect(both.body.error).toMatch(/^after: give after or offset/);
      const gone = await s.api('/deals?after=01890a5d-ac96-774b-bcce-b302099a8057', { key: org.apiKey });
      expect(gone.status).toBe(400);
      expect(gone.body.error).toMatch(/^after: no deal with this id/);
    });
  });
}
