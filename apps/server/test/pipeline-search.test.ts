import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DRIVERS, startTestServer, type TestServer } from './harness.ts';

const DAY = 86_400_000;

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`pipeline and search on ${label}`, () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer(driver);
    });
    afterAll(async () => {
      await s?.stop();
    });

    it('lists the default pipeline’s stages in order, open ones first, then won and lost', async () => {
      const res = await s.api('/pipeline/stages');
      expect(res.status).toBe(200);
      const stages = res.body.data;
      expect(stages.map((x: { name: string }) => x.name)).toEqual([
        'Lead',
        'Qualified',
        'Proposal',
        'Negotiation',
        'Closed Won',
        'Closed Lost',
      ]);
      expect(stages.map((x: { position: number }) => x.position)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(stages[0]).toEqual({
        id: expect.any(String),
        name: 'Lead',
        stage_type: 'open',
        position: 1,
        color: '#94a3b8',
        is_closed: false,
        probability: 10,
      });
      expect(stages[4]).toMatchObject({ stage_type: 'won', is_closed: true, probability: 100 });
      expect(stages[5]).toMatchObject({ stage_type: 'lost', is_closed: true, probability: 0 });
    });

    it('reports pipeline health over open deals: healthy, stale, pending and critical', async () => {
      const empty = await s.api('/pipeline/health');
      expect(empty.body.data).toEqual({
        total_deals: 0,
        healthy_deals: 0,
        healthy_percentage: 0,
        stale_deals: 0,
        pending_actions: 0,
        critical_actions: 0,
        stale_threshold_days: 14,
      });
      const now = Date.now();
      const iso = (t: number) => new Date(t).toISOString();
      const make = async (title: string, closeIn?: number) =>
        (
          await s.api('/deals', {
            method: 'POST',
            json: { title, ...(closeIn === undefined ? {} : { expected_close_date: iso(now + closeIn) }) },
          })
        ).body.data.id as string;
      await make('healthy far close', 30 * DAY); // healthy, not pending
      await make('healthy closing soon', 3 * DAY); // healthy, pending (closing within 7 days)
      await make('healthy no date'); // healthy, pending (no close date)
      const stale = await make('stale', 30 * DAY);
      const idle = await make('very idle', 30 * DAY);
      await make('overdue', -2 * DAY); // critical
      const won = await make('won', 30 * DAY);
      // Age two deals' activity clocks directly: nothing in the API moves time backwards.
      await s.sql('update deals set last_activity_at = ?, created_at = ? where id = ?', [
        iso(now - 20 * DAY),
        iso(now - 20 * DAY),
        stale,
      ]);
      await s.sql('update deals set last_activity_at = ?, created_at = ? where id = ?', [
        iso(now - 40 * DAY),
        iso(now - 40 * DAY),
        idle,
      ]);
      const wonStage = (await s.api('/pipeline/stages')).body.data[4].id;
      await s.api(`/deals/${won}`, { method: 'PATCH', json: { stage_id: wonStage } });

      const res = await s.api('/pipeline/health');
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({
        total_deals: 6,
        healthy_deals: 3,
        healthy_percentage: 50,
        stale_deals: 2, // stale + very idle
        pending_actions: 3, // closing soon, no date, stale
        critical_actions: 2, // very idle (over 2x threshold), overdue
        stale_threshold_days: 14,
      });
    });

    it('finds deals by title or company and contacts by name, email or title, within the organization', async () => {
      const deal = (
        await s.api('/deals', {
          method: 'POST',
          json: { title: 'Quantum upgrade', company_name: 'Vandelay Industries' },
        })
      ).body.data;
      await s.api('/contacts', {
        method: 'POST',
        json: {
          name: 'Art Vandelay',
          deal_id: deal.id,
          email: 'art@vandelay.com',
          title: 'Importer',
          role_type: 'champion',
        },
      });
      await s.api('/deals', { method: 'POST', json: { title: 'Vandelay lookalike' }, key: s.orgB.apiKey });

      const res = await s.api('/search?q=VANDEL');
      expect(res.status).toBe(200);
      expect(res.body.data.deals).toEqual([
        {
          id: deal.id,
          title: 'Quantum upgrade',
          company_name: 'Vandelay Industries',
          stage: 'Lead',
          value: null,
          health: null,
          win_probability: null,
          custom: {},
        },
      ]);
      expect(res.body.data.contacts).toEqual([
        {
          id: expect.any(String),
          name: 'Art Vandelay',
          email: 'art@vandelay.com',
          title: 'Importer',
          role_type: 'champion',
          deal_id: deal.id,
          deal_title: 'Quantum upgrade',
          company: 'Vandelay Industries',
          custom: {},
        },
      ]);
      const byTitle = await s.api('/search?q=import');
      expect(byTitle.body.data.contacts).toHaveLength(1);
      const byEmail = await s.api('/search?q=art@vand');
      expect(byEmail.body.data.contacts).toHaveLength(1);
      const none = await s.api('/search?q=zzzz');
      expect(none.body.data).toEqual({ deals: [], contacts: [] });
    });

    it('returns the 20 best matches of each kind, values equal to the term first, then by value, then newest', async () => {
      for (let i = 1; i <= 22; i++) {
        const deal = await s.api('/deals', {
          method: 'POST',
          json: { title: `Orderly ${i}`, value: i * 10.5 },
        });
        expect(deal.status).toBe(201);
        await s.api('/contacts', {
          method: 'POST',
          json: { name: `Orderly person ${i}`, deal_id: deal.body.data.id },
        });
      }
      const exact = await s.api('/deals', { method: 'POST', json: { title: 'orderly' } });
      const inside = await s.api('/deals', { method: 'POST', json: { title: 'Very orderly' } });
      const res = await s.api('/search?q=orderly');
      expect(res.status).toBe(200);
      // The one equal to the term, then those beginning with it in the order of their values, byte by byte.
      const titles = ['orderly', ...Array.from({ length: 22 }, (_, i) => `Orderly ${i + 1}`).sort()].slice(
        0,
        20,
      );
      expect(res.body.data.deals.map((d: { title: string }) => d.title)).toEqual(titles);
      expect(res.body.data.deals[0].id).toBe(exact.body.data.id);
      expect(res.body.data.deals.map((d: { id: string }) => d.id)).not.toContain(inside.body.data.id);
      expect(res.body.data.deals[1]).toMatchObject({ title: 'Orderly 1', value: 10.5, stage: 'Lead' });
      const names = Array.from({ length: 22 }, (_, i) => `Orderly person ${i + 1}`)
        .sort()
        .slice(0, 20);
      expect(res.body.data.contacts.map((c: { name: string }) => c.name)).toEqual(names);
      expect(res.body.data.contacts[0]).toMatchObject({ name: 'Orderly person 1', deal_title: 'Orderly 1' });
      // How many matched: every one of them (the one inside a title too), exactly.
      expect(res.body.meta).toEqual({
        deals: { total: 24, exact: true },
        contacts: { total: 22, exact: true },
        count_bound: 1000,
      });
      // Matches inside a value come after those that begin with the term, newest first.
      await s.api('/deals', { method: 'POST', json: { title: 'Rderly 2 first' } });
      const inner = await s.api('/search?q=rderly%202');
      expect(inner.body.data.deals.map((d: { title: string }) => d.title)).toEqual([
        'Rderly 2 first',
        'Orderly 22',
        'Orderly 21',
        'Orderly 20',
        'Orderly 2',
      ]);
    });

    it('matches several words in any order, each a word prefix, after the values beginning with the term', async () => {
      const org = (await s.newOrg('Words')).apiKey;
      const post = async (path: string, json: Record<string, unknown>) =>
        (await s.api(path, { method: 'POST', key: org, json })).body.data;
      const renewal = await post('/deals', {
        title: 'Renewal for Hooli Systems',
        company_name: 'Hooli Systems',
      });
      const phrase = await post('/deals', { title: 'Hooli renewal', company_name: 'Hooli Labs' });
      const inside = await post('/deals', { title: 'Shooli renewals' });
      await post('/deals', { title: 'Renewal for Acme' });
      await post('/contacts', { name: 'Renée Hoolihan', email: 'renee@hooli.com', deal_id: renewal.id });
      await post('/companies', { name: 'Hooli Renewables', domain: 'hooli-renew.example' });

      const res = await s.api('/search?q=hooli%20renew', { key: org });
      expect(res.status).toBe(200);
      // The title beginning with the term first; then every row whose words begin with the term's words,
      // newest first; then the one holding the term inside a word ("Shooli renewals").
      expect(res.body.data.deals.map((d: { id: string }) => d.id)).toEqual([
        phrase.id,
        renewal.id,
        inside.id,
      ]);
      expect(res.body.meta.deals).toEqual({ total: 3, exact: true });
      expect(res.body.data.contacts).toEqual([]);
      expect(res.body.data.companies.map((c: { name: string }) => c.name)).toEqual(['Hooli Renewables']);
      // A prefix as typed: every word beginning with it, in the order of the values that begin with it.
      const typed = await s.api('/search?q=hoo', { key: org });
      expect(typed.body.data.deals.map((d: { id: string }) => d.id)).toEqual([
        phrase.id,
        renewal.id,
        inside.id,
      ]);
      expect(typed.body.data.contacts).toHaveLength(1);
      // The same rule in every other q, and the word order does not matter.
      const contacts = await s.api('/contacts?q=hool%20ren', { key: org });
      expect(contacts.body.data.map((c: { name: string }) => c.name)).toEqual(['Renée Hoolihan']);
      expect(contacts.body.meta.total).toBe(1);
      const companies = await s.api('/companies?q=renew%20hooli', { key: org });
      expect(companies.body.data.map((c: { name: string }) => c.name)).toEqual(['Hooli Renewables']);
      expect((await s.api('/search?q=systems%20for%20renewal', { key: org })).body.data.deals).toEqual([
        expect.objectContaining({ id: renewal.id }),
      ]);
    });

    it('puts rows holding the term’s words whole before rows whose words only begin with them', async () => {
      const org = (await s.newOrg('Whole words')).apiKey;
      const post = async (json: Record<string, unknown>) =>
        (await s.api('/deals', { method: 'POST', key: org, json })).body.data;
      const whole = await post({ title: 'Renewal for Hooli Systems' });
      const begins = await post({ title: 'Renewals for Hooligans' });
      const inside = await post({ title: 'Shooli renewal' });
      const res = await s.api('/search?q=hooli%20renewal', { key: org });
      // Newest first within a rank, but "Renewals for Hooligans", the newer, only begins the words.
      expect(res.body.data.deals.map((d: { id: string }) => d.id)).toEqual([whole.id, begins.id, inside.id]);
      expect(res.body.meta.deals).toEqual({ total: 3, exact: true });
    });

    it('treats % and _ in the query as plain characters', async () => {
      await s.api('/deals', { method: 'POST', json: { title: '100% uptime deal' } });
      const res = await s.api(`/search?q=${encodeURIComponent('0%')}`);
      expect(res.body.data.deals.map((d: { title: string }) => d.title)).toEqual(['100% uptime deal']);
      const underscore = await s.api('/search?q=__');
      expect(underscore.body.data.deals).toEqual([]);
    });
  });
}
