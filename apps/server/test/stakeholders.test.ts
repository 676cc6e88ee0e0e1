import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestOrg, type TestServer } from './harness.ts';
import { mcpClient } from './mcp-client.ts';

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`stakeholders on many deals on ${label}`, () => {
    let s: TestServer;
    let org: TestOrg;
    beforeAll(async () => {
      s = await startTestServer(driver);
    });
    afterAll(async () => {
      await s?.stop();
    });
    const api = (path: string, init: Parameters<TestServer['api']>[1] = {}) =>
      s.api(path, { key: org.apiKey, ...init });
    const post = async (path: string, json: unknown) => {
      const res = await api(path, { method: 'POST', json });
      expect(res.status, res.text).toBe(201);
      return res.body.data;
    };
    const put = (deal: string, contact: string, json: unknown = {}) =>
      api(`/deals/${deal}/stakeholders/${contact}`, { method: 'PUT', json });
    const stakeholdersOf = async (deal: string) => (await api(`/deals/${deal}`)).body.data.stakeholders;

    it('one contact on three deals with three roles; the detail, the contact’s deals and the events say so', async () => {
      org = await s.newOrg(`stakeholders ${Math.random()}`);
      const [first, second, third] = [
        await post('/deals', { title: 'First' }),
        await post('/deals', { title: 'Renewal' }),
        await post('/deals', { title: 'Expansion' }),
      ];
      const jane = await post('/contacts', { name: 'Jane', deal_id: first.id, role_type: 'champion' });

      const linked = await put(second.id, jane.id, { role_type: 'influencer', influence_level: 'high' });
      expect(linked.status, linked.text).toBe(200);
      expect(linked.body.data).toMatchObject({
        deal_id: second.id,
        contact_id: jane.id,
        role_type: 'influencer',
        influence_level: 'high',
        engagement_level: null,
        is_primary: false,
        own_deal: false,
      });
      const third1 = await put(third.id, jane.id, { role_type: 'economic_buyer', is_primary: true });
      expect(third1.body.data).toMatchObject({ role_type: 'economic_buyer', is_primary: true });
      // The same PUT again changes nothing and emits nothing more.
      const again = await put(third.id, jane.id, { role_type: 'economic_buyer', is_primary: true });
      expect(again.body.data).toEqual(third1.body.data);

      expect(await stakeholdersOf(first.id)).toEqual([
        {
          id: jane.id,
          name: 'Jane',
          email: null,
          title: null,
          role_type: 'champion',
          influence_level: null,
          engagement_level: null,
          sentiment: null,
        },
      ]);
      expect((await stakeholdersOf(second.id))[0]).toMatchObject({ id: jane.id, role_type: 'influencer' });
      expect((await stakeholdersOf(third.id))[0]).toMatchObject({ role_type: 'economic_buyer' });

      const deals = await api(`/contacts/${jane.id}/deals`);
      expect(deals.status, deals.text).toBe(200);
      expect(
        deals.body.data.map((d: { title: string; role_type: string; own_deal: boolean }) => [
          d.title,
          d.role_type,
          d.own_deal,
        ]),
      ).toEqual([
        ['First', 'champion', true],
        ['Renewal', 'influencer', false],
        ['Expansion', 'economic_buyer', false],
      ]);
      // The contract's contact is unchanged: its deal and role are its first deal's.
      expect((await api(`/contacts/${jane.id}`)).body.data).toMatchObject({
        deal_id: first.id,
        role_type: 'champion',
      });

      // On its own deal, the link's role is the contact's own fields (and PATCH /contacts' event).
      const own = await put(first.id, jane.id, { sentiment: 'positive' });
      expect(own.body.data).toMatchObject({ own_deal: true, role_type: 'champion', sentiment: 'positive' });
      expect((await api(`/contacts/${jane.id}`)).body.data.sentiment).toBe('positive');

      const events = (await api('/events?types=deal.stakeholder_added,deal.stakeholder_removed')).body.data;
      expect(
        events.map((e: { type: string; data: { deal_id: string } }) => [e.type, e.data.deal_id]),
      ).toEqual([
        ['deal.stakeholder_added', second.id],
        ['deal.stakeholder_added', third.id],
      ]);

      expect((await api(`/deals/${second.id}/stakeholders/${jane.id}`, { method: 'DELETE' })).body).toEqual({
        success: true,
      });
      // Removing it again is nothing to do.
      expect((await api(`/deals/${second.id}/stakeholders/${jane.id}`, { method: 'DELETE' })).status).toBe(
        200,
      );
      expect(await stakeholdersOf(second.id)).toEqual([]);
      const ownDelete = await api(`/deals/${first.id}/stakeholders/${jane.id}`, { method: 'DELETE' });
      expect(ownDelete.status).toBe(409);
      const removed = (await api('/events?types=deal.stakeholder_removed')).body.data;
      expect(removed).toHaveLength(1);
      expect(removed[0].data).toEqual({ deal_id: second.id, contact_id: jane.id });
      const activities = (await api(`/deals/${second.id}`)).body.data.recent_activities.map(
        (a: { type: string }) => a.type,
      );
      expect(activities).toEqual(['stakeholder_removed', 'stakeholder_added', 'deal_created']);

      // Deleting a deal takes its links with it; the contact stays on its others.
      expect((await api(`/deals/${third.id}`, { method: 'DELETE' })).status).toBe(200);
      expect((await api(`/contacts/${jane.id}/deals`)).body.data).toHaveLength(1);

      // Unknown ids, and another organization's, are 404s; bad input a 400 naming the field.
      expect((await put(first.id, '0195f3a2-7c1e-7b3a-9f10-2d4e6a8c0b12')).status).toBe(404);
      const theirs = await s.api(`/deals/${first.id}/stakeholders/${jane.id}`, { method: 'PUT', json: {} });
      expect(theirs.status).toBe(404);
      const bad = await put(first.id, jane.id, { role_type: 'boss' });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toContain('role_type');
    });

    it('at most one economic buyer and one primary contact per deal, under concurrent writers', async () => {
      org = await s.newOrg(`caps ${Math.random()}`);
      const home = await post('/deals', { title: 'Home' });
      const target = await post('/deals', { title: 'Target' });
      const people = [];
      for (let i = 0; i < 6; i++) people.push(await post('/contacts', { name: `P${i}`, deal_id: home.id }));
      const buyers = await Promise.all(
        people.map((p) => put(target.id, p.id, { role_type: 'economic_buyer' })),
      );
      expect(buyers.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
      const holder = buyers.find((r) => r.status === 200)?.body.data.contact_id;
      for (const r of buyers.filter((x) => x.status === 409)) {
        expect(r.body.conflicting_id).toBe(holder);
        expect(r.body.error).toBe(`role_type: contact ${holder} is already this deal’s economic buyer`);
      }
      const primaries = await Promise.all(people.map((p) => put(target.id, p.id, { is_primary: true })));
      expect(primaries.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
      const stakeholders = await stakeholdersOf(target.id);
      expect(
        stakeholders.filter((x: { role_type: string }) => x.role_type === 'economic_buyer'),
      ).toHaveLength(1);
      const links = await Promise.all(
        people.map(async (p) => (await api(`/contacts/${p.id}/deals`)).body.data),
      );
      expect(links.flat().filter((l: { is_primary: boolean }) => l.is_primary)).toHaveLength(1);
      // The holder gives it up; another may take it.
      const primary = primaries.find((r) => r.status === 200)?.body.data.contact_id;
      expect((await put(target.id, primary, { is_primary: false })).body.data.is_primary).toBe(false);
      const other = people.find((p) => p.id !== primary);
      expect((await put(target.id, other.id, { is_primary: true })).status).toBe(200);
    });

    it('tRPC and MCP reach the same operations', async () => {
      org = await s.newOrg(`doors ${Math.random()}`);
      const a = await post('/deals', { title: 'A' });
      const b = await post('/deals', { title: 'B' });
      const bob = await post('/contacts', { name: 'Bob', deal_id: a.id });
      const trpc = s.trpc(org);
      const viaTrpc = await trpc.deals.linkStakeholder.mutate({
        id: b.id,
        contact_id: bob.id,
        role_type: 'blocker',
      });
      expect(viaTrpc.data.role_type).toBe('blocker');
      const mcp = await mcpClient(s.url, org.apiKey);
      try {
        const listed = (await mcp.callTool({
          name: 'contacts-deals',
          arguments: { id: bob.id },
        })) as CallToolResult;
        expect(listed.isError, JSON.stringify(listed.content)).toBeFalsy();
        expect(JSON.stringify(listed.structuredContent)).toContain('"role_type":"blocker"');
        const changed = (await mcp.callTool({
          name: 'deals-linkStakeholder',
          arguments: { id: b.id, contact_id: bob.id, role_type: 'champion' },
        })) as CallToolResult;
        expect(changed.isError, JSON.stringify(changed.content)).toBeFalsy();
      } finally {
        await mcp.close();
      }
      expect((await stakeholdersOf(b.id))[0].role_type).toBe('champion');
    });
  });
}
