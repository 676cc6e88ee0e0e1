import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, ISO, MISSING_ID, startTestServer, type TestServer, UUID } from './harness.ts';

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`contacts on ${label}`, () => {
    let s: TestServer;
    let dealId: string;
    beforeAll(async () => {
      s = await startTestServer(driver);
      dealId = (
        await s.api('/deals', { method: 'POST', json: { title: 'Globex renewal', company_name: 'Globex' } })
      ).body.data.id;
    });
    afterAll(async () => {
      await s?.stop();
    });

    it('adds a stakeholder to a deal: 201 with the Contact, role_type defaulting to unknown', async () => {
      const res = await s.api('/contacts', {
        method: 'POST',
        json: {
          name: 'Hank Scorpio',
          deal_id: dealId,
          email: 'hank@globex.com',
          title: 'CEO',
          phone: '+1 555 0100',
        },
      });
      expect(res.status).toBe(201);
      expect(res.body.data).toEqual({
        id: expect.stringMatching(UUID),
        name: 'Hank Scorpio',
        email: 'hank@globex.com',
        title: 'CEO',
        phone: '+1 555 0100',
        deal_id: dealId,
        company_id: null,
        role_type: 'unknown',
        department: null,
        influence_level: null,
        engagement_level: null,
        sentiment: null,
        linkedin_url: null,
        notes: null,
        created_at: expect.stringMatching(ISO),
        updated_at: null,
        custom: {},
      });
    });

    it('moves the deal’s last_activity_at and records a contact_added activity', async () => {
      const before = (await s.api(`/deals/${dealId}`)).body.data;
      await new Promise((r) => setTimeout(r, 5));
      await s.api('/contacts', {
        method: 'POST',
        json: { name: 'Frank', deal_id: dealId, role_type: 'blocker' },
      });
      const after = (await s.api(`/deals/${dealId}`)).body.data;
      expect(Date.parse(after.deal.last_activity_at)).toBeGreaterThan(
        Date.parse(before.deal.last_activity_at),
      );
      expect(after.recent_activities[0]).toMatchObject({
        type: 'contact_added',
        description: expect.stringContaining('Frank'),
      });
    });

    it('answers 404 when the deal does not exist, and stores nothing', async () => {
      const res = await s.api('/contacts', { method: 'POST', json: { name: 'Orphan', deal_id: MISSING_ID } });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: 'Deal not found', code: 'not_found' });
      expect(await s.sql("select id from contacts where name = 'Orphan'")).toHaveLength(0);
    });

    it('shows a contact with its deal’s title and company', async () => {
      const created = (
        await s.api('/contacts', { method: 'POST', json: { name: 'Detail Dan', deal_id: dealId } })
      ).body.data;
      const res = await s.api(`/contacts/${created.id}`);
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ ...created, deal: { title: 'Globex renewal', company: 'Globex' } });
      expect((await s.api(`/contacts/${MISSING_ID}`)).status).toBe(404);
    });

    it('updates the given fields, resets role_type with null, and records the change', async () => {
      const created = (
        await s.api('/contacts', {
          method: 'POST',
          json: { name: 'Patchy', deal_id: dealId, role_type: 'champion' },
        })
      ).body.data;
      const res = await s.api(`/contacts/${created.id}`, {
        method: 'PATCH',
        json: {
          influence_level: 'high',
          engagement_level: 'medium',
          sentiment: 'positive',
          department: 'IT',
          linkedin_url: 'https://www.linkedin.com/in/patchy',
          notes: 'likes us',
        },
      });
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({
        name: 'Patchy',
        role_type: 'champion',
        influence_level: 'high',
        engagement_level: 'medium',
        sentiment: 'positive',
        department: 'IT',
        linkedin_url: 'https://www.linkedin.com/in/patchy',
        notes: 'likes us',
      });
      expect(res.body.data.updated_at).toMatch(ISO);
      const reset = await s.api(`/contacts/${created.id}`, {
        method: 'PATCH',
        json: { role_type: null, email: null },
      });
      expect(reset.body.data).toMatchObject({ role_type: 'unknown', email: null });
      const activities = await s.sql<{ type: string }>(
        "select type from activities where contact_id = ? and type = 'contact_updated'",
        [created.id],
      );
      expect(activities).toHaveLength(2);
    });

    it('does not let deal_id be changed', async () => {
      const created = (await s.api('/contacts', { method: 'POST', json: { name: 'Stuck', deal_id: dealId } }))
        .body.data;
      const res = await s.api(`/contacts/${created.id}`, { method: 'PATCH', json: { deal_id: MISSING_ID } });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/deal_id/);
    });

    it('lists contacts newest first with meta, and searches name, email and title case-insensitively', async () => {
      const other = (await s.api('/deals', { method: 'POST', json: { title: 'Other' } })).body.data.id;
      await s.api('/contacts', {
        method: 'POST',
        json: { name: 'Zed Zebra', deal_id: other, email: 'zz@zoo.org' },
      });
      await s.api('/contacts', {
        method: 'POST',
        json: { name: 'Yak', deal_id: other, title: 'Head of ZOOlogy' },
      });
      const all = await s.api('/contacts?limit=2');
      expect(all.status).toBe(200);
      expect(all.body.data.map((c: { name: string }) => c.name)).toEqual(['Yak', 'Zed Zebra']);
      expect(all.body.meta).toEqual({
        total: expect.any(Number),
        limit: 2,
        offset: 0,
        next_cursor: all.body.data[1].id,
      });
      const q = await s.api('/contacts?q=zoo');
      expect(q.body.data.map((c: { name: string }) => c.name).sort()).toEqual(['Yak', 'Zed Zebra']);
      expect(q.body.meta.total).toBe(2);
      expect(q.body.meta).not.toHaveProperty('total_exact');
      const literal = await s.api(`/contacts?q=${encodeURIComponent('%')}`);
      expect(literal.body.meta.total).toBe(0);
    });
  });
}
