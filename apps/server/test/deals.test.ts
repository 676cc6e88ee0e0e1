import { pruneIdempotencyKeys } from '@crm/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, ISO, MISSING_ID, startTestServer, type TestServer, UUID } from './harness.ts';

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`deals on ${label}`, () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer(driver);
    });
    afterAll(async () => {
      await s?.stop();
    });

    async function stages() {
      const res = await s.api('/pipeline/stages');
      return res.body.data as Array<{ id: string; name: string; stage_type: string }>;
    }

    it('creates a deal in the first stage of the default pipeline and answers 201 with the Deal', async () => {
      const res = await s.api('/deals', {
        method: 'POST',
        json: { title: 'Acme rollout', company_name: 'Acme', value: 12500.5, contact_email: 'ann@acme.io' },
      });
      expect(res.status).toBe(201);
      const deal = res.body.data;
      expect(deal).toMatchObject({
        title: 'Acme rollout',
        company_name: 'Acme',
        value: 12500.5,
        currency: 'USD',
        contact_email: 'ann@acme.io',
        stage_name: 'Lead',
        stage_type: 'open',
        pipeline_name: 'Sales pipeline',
        lifecycle_stage: 'lead',
        win_probability: null,
        updated_at: null,
      });
      expect(deal.id).toMatch(UUID);
      expect(deal.created_at).toMatch(ISO);
      expect(deal.last_activity_at).toMatch(ISO);
      const [first] = await stages();
      expect(deal.stage_id).toBe(first?.id);
      // What a create answers is exactly what reading the deal shows.
      expect((await s.api(`/deals/${deal.id}`)).body.data.deal).toEqual(deal);
    });

    it('stores every create field exactly as sent, whatever characters the text holds', async () => {
      const tricky = `O'Brien \\ "quoted" ? $1 :name -- /* x */ ünïcødé 🚀 %_`;
      const res = await s.api('/deals', {
        method: 'POST',
        json: {
          title: tricky,
          company_name: tricky,
          value: 0.01,
          currency: 'eur',
          contact_name: tricky,
          contact_email: 'o.brien+crm@example.com',
          notes: `${tricky}\nsecond line`,
          lead_source: tricky,
          expected_close_date: '2027-03-04T05:06:07.891+02:00',
        },
      });
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({
        title: tricky,
        company_name: tricky,
        value: 0.01,
        currency: 'EUR',
        contact_name: tricky,
        contact_email: 'o.brien+crm@example.com',
        notes: `${tricky}\nsecond line`,
        lead_source: tricky,
        expected_close_date: '2027-03-04T03:06:07.891Z',
      });
      const read = await s.api(`/deals/${res.body.data.id}`);
      expect(read.body.data.deal).toEqual(res.body.data);
      expect(read.body.data.recent_activities).toEqual([
        expect.objectContaining({
          type: 'deal_created',
          description: `Deal "${tricky}" created in stage Lead`,
        }),
      ]);
    });

    it('lists deals newest first with total, limit and offset, and filters by lifecycle_stage and pipeline_id', async () => {
      for (const title of ['L1', 'L2', 'L3']) await s.api('/deals', { method: 'POST', json: { title } });
      const page = await s.api('/deals?limit=2&offset=0');
      expect(page.status).toBe(200);
      expect(page.body.meta).toEqual({
        total: expect.any(Number),
        limit: 2,
        offset: 0,
        next_cursor: page.body.data[1].id,
      });
      expect(page.body.data).toHaveLength(2);
      expect(page.body.data[0].title).toBe('L3');
      const total = page.body.meta.total;
      const next = await s.api(`/deals?limit=2&offset=${total - 1}`);
      expect(next.body.data).toHaveLength(1);
      const past = await s.api(`/deals?limit=2&offset=${total}`);
      expect(past.body).toEqual({ data: [], meta: { total, limit: 2, offset: total, next_cursor: null } });

      const defaults = await s.api('/deals');
      expect(defaults.body.meta).toMatchObject({ limit: 50, offset: 0 });

      const won = (await stages()).find((x) => x.stage_type === 'won');
      const target = page.body.data[0].id;
      await s.api(`/deals/${target}`, { method: 'PATCH', json: { stage_id: won?.id } });
      const customers = await s.api('/deals?lifecycle_stage=customer');
      expect(customers.body.data.map((d: { id: string }) => d.id)).toEqual([target]);
      expect(customers.body.meta.total).toBe(1);

      const pipelineId = page.body.data[0].pipeline_id;
      const inPipeline = await s.api(`/deals?pipeline_id=${pipelineId}&limit=100`);
      expect(inPipeline.body.meta.total).toBe(total);
      const elsewhere = await s.api(`/deals?pipeline_id=${MISSING_ID}`);
      expect(elsewhere.body).toEqual({
        data: [],
        meta: { total: 0, limit: 50, offset: 0, next_cursor: null },
      });
    });

    it('shows the deal with its stakeholders and recent activities', async () => {
      const deal = (
        await s.api('/deals', { method: 'POST', json: { title: 'Detail', company_name: 'Initech' } })
      ).body.data;
      const contact = await s.api('/contacts', {
        method: 'POST',
        json: { name: 'Peter', deal_id: deal.id, role_type: 'champion', email: 'peter@initech.com' },
      });
      expect(contact.status).toBe(201);
      const res = await s.api(`/deals/${deal.id}`);
      expect(res.status).toBe(200);
      expect(res.body.data.deal.id).toBe(deal.id);
      expect(res.body.data.stakeholders).toEqual([
        {
          id: contact.body.data.id,
          name: 'Peter',
          email: 'peter@initech.com',
          title: null,
          role_type: 'champion',
          influence_level: null,
          engagement_level: null,
          sentiment: null,
        },
      ]);
      const types = res.body.data.recent_activities.map((a: { type: string }) => a.type);
      expect(types).toEqual(['contact_added', 'deal_created']);
      for (const a of res.body.data.recent_activities) expect(a.created_at).toMatch(ISO);
    });

    it('shows the 20 newest activities, newest first, and every stakeholder in the order added', async () => {
      const deal = (await s.api('/deals', { method: 'POST', json: { title: 'Busy deal' } })).body.data;
      for (const name of ['First', 'Second', 'Third'])
        expect((await s.api('/contacts', { method: 'POST', json: { name, deal_id: deal.id } })).status).toBe(
          201,
        );
      for (let i = 1; i <= 22; i++)
        expect(
          (await s.api(`/deals/${deal.id}`, { method: 'PATCH', json: { notes: `call ${i}` } })).status,
        ).toBe(200);
      const res = await s.api(`/deals/${deal.id}`);
      expect(res.status).toBe(200);
      expect(res.body.data.stakeholders.map((c: { name: string }) => c.name)).toEqual([
        'First',
        'Second',
        'Third',
      ]);
      const stored = await s.sql<{ id: string }>(
        'select id from activities where deal_id = ? order by created_at desc, id desc limit 20',
        [deal.id],
      );
      expect(res.body.data.recent_activities.map((a: { id: string }) => a.id)).toEqual(
        stored.map((a) => a.id),
      );
      expect(res.body.data.recent_activities[0]).toMatchObject({ type: 'deal_updated' });
      expect(res.body.data.recent_activities).toHaveLength(20);
    });

    it('updates only the given fields, records each change, and follows the stage with lifecycle', async () => {
      const deal = (await s.api('/deals', { method: 'POST', json: { title: 'Patch me', value: 100 } })).body
        .data;
      const all = await stages();
      const proposal = all.find((x) => x.name === 'Proposal');
      const res = await s.api(`/deals/${deal.id}`, {
        method: 'PATCH',
        json: { value: 250, notes: 'call back', stage_id: proposal?.id, company_name: null },
      });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({
        title: 'Patch me',
        value: 250,
        notes: 'call back',
        stage_name: 'Proposal',
        stage_type: 'open',
        lifecycle_stage: 'opportunity',
      });
      expect(res.body.data.updated_at).toMatch(ISO);

      const rows = await s.sql<{ type: string; changes: unknown }>(
        'select type, changes from activities where deal_id = ? order by created_at, type',
        [deal.id],
      );
      const updated = rows.find((r) => r.type === 'deal_updated');
      const changes = typeof updated?.changes === 'string' ? JSON.parse(updated.changes) : updated?.changes;
      expect(changes).toEqual({ value: { from: 100, to: 250 }, notes: { from: null, to: 'call back' } });
      expect(rows.map((r) => r.type).sort()).toEqual(['deal_created', 'deal_updated', 'stage_changed']);
      const stageEntry = rows.find((r) => r.type === 'stage_changed');
      const stageChanges =
        typeof stageEntry?.changes === 'string' ? JSON.parse(stageEntry.changes) : stageEntry?.changes;
      expect(stageChanges).toEqual({
        stage: { from: 'Lead', to: 'Proposal' },
        lifecycle_stage: { from: 'lead', to: 'opportunity' },
      });

      // A client-set lifecycle stays put through stage moves; null hands it back to the stage.
      const lost = all.find((x) => x.stage_type === 'lost');
      const pinned = await s.api(`/deals/${deal.id}`, {
        method: 'PATCH',
        json: { lifecycle_stage: 'customer' },
      });
      expect(pinned.body.data.lifecycle_stage).toBe('customer');
      const moved = await s.api(`/deals/${deal.id}`, { method: 'PATCH', json: { stage_id: lost?.id } });
      expect(moved.body.data).toMatchObject({ stage_type: 'lost', lifecycle_stage: 'customer' });
      const released = await s.api(`/deals/${deal.id}`, { method: 'PATCH', json: { lifecycle_stage: null } });
      expect(released.body.data.lifecycle_stage).toBe('lost');
    });

    it("stores a client's own lifecycle_stage as given (trimmed), pins it through stage moves, and filters by it", async () => {
      const stages = (await s.api('/pipeline/stages')).body.data as Array<{ id: string; stage_type: string }>;
      const deal = (await s.api('/deals', { method: 'POST', json: { title: 'Own lifecycle' } })).body.data;
      const set = await s.api(`/deals/${deal.id}`, {
        method: 'PATCH',
        json: { lifecycle_stage: '  evaluation ' },
      });
      expect(set.status, set.text).toBe(200);
      expect(set.body.data.lifecycle_stage).toBe('evaluation');
      const won = stages.find((x) => x.stage_type === 'won');
      const moved = await s.api(`/deals/${deal.id}`, { method: 'PATCH', json: { stage_id: won?.id } });
      expect(moved.body.data).toMatchObject({ stage_type: 'won', lifecycle_stage: 'evaluation' });
      expect((await s.api(`/deals/${deal.id}`)).body.data.deal.lifecycle_stage).toBe('evaluation');
      const other = (await s.api('/deals', { method: 'POST', json: { title: 'Churn watch' } })).body.data;
      await s.api(`/deals/${other.id}`, { method: 'PATCH', json: { lifecycle_stage: 'churn_risk' } });
      const listed = await s.api('/deals?lifecycle_stage=churn_risk');
      expect(listed.body.data.map((d: { id: string }) => d.id)).toEqual([other.id]);
      expect(listed.body.meta.total).toBe(1);
    });

    it('records no activity for a PATCH that changes nothing', async () => {
      const deal = (await s.api('/deals', { method: 'POST', json: { title: 'Same', value: 5 } })).body.data;
      const res = await s.api(`/deals/${deal.id}`, { method: 'PATCH', json: { title: 'Same', value: 5 } });
      expect(res.status).toBe(200);
      const rows = await s.sql('select id from activities where deal_id = ?', [deal.id]);
      expect(rows).toHaveLength(1);
    });

    it('rejects a stage of another pipeline or organization with 400 and leaves the deal as it was', async () => {
      const deal = (await s.api('/deals', { method: 'POST', json: { title: 'Guarded' } })).body.data;
      const otherOrgStage = (await s.api('/pipeline/stages', { key: s.orgB.apiKey })).body.data[1].id;
      const res = await s.api(`/deals/${deal.id}`, {
        method: 'PATCH',
        json: { stage_id: otherOrgStage, value: 9 },
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/stage_id/);
      const create = await s.api('/deals', { method: 'POST', json: { title: 'x', stage_id: otherOrgStage } });
      expect(create.status).toBe(400);
      const after = await s.api(`/deals/${deal.id}`);
      expect(after.body.data.deal).toMatchObject({ stage_name: 'Lead', value: null });
    });

    it('deletes a deal with its contacts and activities, then answers 404', async () => {
      const deal = (await s.api('/deals', { method: 'POST', json: { title: 'Doomed' } })).body.data;
      const contact = (await s.api('/contacts', { method: 'POST', json: { name: 'Gone', deal_id: deal.id } }))
        .body.data;
      const res = await s.api(`/deals/${deal.id}`, { method: 'DELETE' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true });
      expect((await s.api(`/deals/${deal.id}`)).status).toBe(404);
      expect((await s.api(`/deals/${deal.id}`, { method: 'DELETE' })).status).toBe(404);
      expect((await s.api(`/contacts/${contact.id}`)).status).toBe(404);
      expect(await s.sql('select id from activities where deal_id = ?', [deal.id])).toHaveLength(0);
    });

    it('answers 404 with the contract body for a missing deal', async () => {
      for (const [method, json] of [
        ['GET', undefined],
        ['PATCH', { title: 'x' }],
        ['DELETE', undefined],
      ] as const) {
        const res = await s.api(`/deals/${MISSING_ID}`, { method, json });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ error: 'Deal not found', code: 'not_found' });
      }
    });

    it('records when an API key was last used', async () => {
      await s.api('/deals?limit=1');
      await new Promise((r) => setTimeout(r, 100));
      const [row] = await s.sql<{ last_used_at: unknown }>('select last_used_at from api_keys where id = ?', [
        s.orgA.keyId,
      ]);
      expect(row?.last_used_at).not.toBeNull();
    });

    describe('Idempotency-Key', () => {
      it('returns the first response for a retry with the same key and body, without creating again', async () => {
        const headers = { 'idempotency-key': `retry-${driver}-1` };
        const first = await s.api('/deals', { method: 'POST', headers, json: { title: 'Once', value: 1 } });
        const second = await s.api('/deals', { method: 'POST', headers, json: { value: 1, title: 'Once' } });
        expect(first.status).toBe(201);
        expect(second.status).toBe(201);
        expect(second.body).toEqual(first.body);
        expect(second.headers.get('idempotent-replayed')).toBe('true');
        expect(await s.sql("select id from deals where title = 'Once'")).toHaveLength(1);
      });

      it('creates once when two requests with the same key race', async () => {
        const headers = { 'idempotency-key': `race-${driver}` };
        const results = await Promise.all(
          Array.from({ length: 6 }, () =>
            s.api('/deals', { method: 'POST', headers, json: { title: 'Raced' } }),
          ),
        );
        for (const r of results) expect(r.status).toBe(201);
        expect(new Set(results.map((r) => r.body.data.id)).size).toBe(1);
        expect(await s.sql("select id from deals where title = 'Raced'")).toHaveLength(1);
      });

      it('answers 422 for the same key with a different body', async () => {
        const headers = { 'idempotency-key': `reuse-${driver}` };
        await s.api('/deals', { method: 'POST', headers, json: { title: 'First body' } });
        const res = await s.api('/deals', { method: 'POST', headers, json: { title: 'Second body' } });
        expect(res.status).toBe(422);
        expect(res.body.code).toBe('idempotency_key_reused');
        expect(res.body.error).toMatch(/Idempotency-Key/);
        expect(await s.sql("select id from deals where title = 'Second body'")).toHaveLength(0);
      });

      it('scopes keys to the API key that sent them', async () => {
        const headers = { 'idempotency-key': `shared-${driver}` };
        const a = await s.api('/deals', { method: 'POST', headers, json: { title: 'Scoped' } });
        const b = await s.api('/deals', {
          method: 'POST',
          headers,
          json: { title: 'Scoped' },
          key: s.orgB.apiKey,
        });
        expect(b.status).toBe(201);
        expect(b.body.data.id).not.toBe(a.body.data.id);
      });

      it('lets a key be used afresh once its 24 hours are over, and prunes expired keys', async () => {
        const headers = { 'idempotency-key': `expired-${driver}` };
        const first = await s.api('/deals', { method: 'POST', headers, json: { title: 'Old retry' } });
        await s.sql(`update idempotency_keys set created_at = now() - interval '25 hours' where key = ?`, [
          headers['idempotency-key'],
        ]);
        const again = await s.api('/deals', { method: 'POST', headers, json: { title: 'Old retry' } });
        expect(again.status).toBe(201);
        expect(again.body.data.id).not.toBe(first.body.data.id);
        expect(again.headers.get('idempotent-replayed')).toBeNull();

        await s.sql(`update idempotency_keys set created_at = now() - interval '25 hours' where key = ?`, [
          headers['idempotency-key'],
        ]);
        expect(await pruneIdempotencyKeys(s.running.db.orm.em.fork())).toBeGreaterThanOrEqual(1);
        expect(
          await s.sql('select id from idempotency_keys where key = ?', [headers['idempotency-key']]),
        ).toHaveLength(0);
      });

      it('works for POST /contacts too', async () => {
        const deal = (await s.api('/deals', { method: 'POST', json: { title: 'For contact' } })).body.data;
        const headers = { 'idempotency-key': `contact-${driver}` };
        const json = { name: 'Idem', deal_id: deal.id };
        const first = await s.api('/contacts', { method: 'POST', headers, json });
        const second = await s.api('/contacts', { method: 'POST', headers, json });
        expect(second.body).toEqual(first.body);
        expect(await s.sql('select id from contacts where deal_id = ?', [deal.id])).toHaveLength(1);
      });
    });
  });
}
