import { expect } from 'vitest';
import type { TestOrg, TestServer } from './harness.ts';

/** Builds deals through the public API, as a client would. */
export function aiFixtures(s: TestServer, org: TestOrg) {
  const key = org.apiKey;
  async function post(path: string, json: unknown) {
    const res = await s.api(path, { method: 'POST', key, json });
    expect(res.status, res.text).toBe(201);
    return res.body.data as { id: string } & Record<string, unknown>;
  }
  async function patch(path: string, json: unknown) {
    const res = await s.api(path, { method: 'PATCH', key, json });
    expect(res.status, res.text).toBe(200);
    return res.body.data as Record<string, unknown>;
  }
  async function stages() {
    const res = await s.api('/pipeline/stages', { key });
    return res.body.data as Array<{ id: string; name: string; stage_type: string }>;
  }
  const inDays = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString();

  /**
   * A deal with the same fields either way; `strong` adds an engaged, positive economic buyer and champion.
   * The weak one has a lukewarm end user only.
   */
  async function deal(title: string, strong: boolean, extra: Record<string, unknown> = {}) {
    const d = await post('/deals', {
      title,
      company_name: 'Initrode',
      value: 48_000,
      expected_close_date: inDays(30),
      notes: 'Pain: invoicing is manual and slow. Evaluation criteria agreed: SSO and audit log.',
      ...extra,
    });
    if (strong) {
      const eb = await post('/contacts', {
        name: 'Erin Buyer',
        deal_id: d.id,
        role_type: 'economic_buyer',
        title: 'CFO',
      });
      await patch(`/contacts/${eb.id}`, {
        engagement_level: 'high',
        sentiment: 'positive',
        influence_level: 'high',
      });
      const ch = await post('/contacts', {
        name: 'Cho Champion',
        deal_id: d.id,
        role_type: 'champion',
        title: 'VP Ops',
      });
      await patch(`/contacts/${ch.id}`, {
        engagement_level: 'high',
        sentiment: 'positive',
        influence_level: 'high',
      });
    } else {
      const user = await post('/contacts', { name: 'Uma User', deal_id: d.id, role_type: 'end_user' });
      await patch(`/contacts/${user.id}`, { engagement_level: 'low', sentiment: 'neutral' });
    }
    return d;
  }

  /** Moves the deal's whole activity log (and its activity clock) `days` into the past. */
  async function age(dealId: string, days: number) {
    await s.sql(
      `update activities set created_at = created_at - make_interval(days => ${days}) where deal_id = ?`,
      [dealId],
    );
    await s.sql(
      `update deals set last_activity_at = last_activity_at - make_interval(days => ${days}),
         created_at = created_at - make_interval(days => ${days}) where id = ?`,
      [dealId],
    );
    await s.sql(
      `update contacts set created_at = created_at - make_interval(days => ${days}) where deal_id = ?`,
      [dealId],
    );
  }

  return { post, patch, stages, deal, age, inDays };
}
