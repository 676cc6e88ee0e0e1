/**
 * The typed clients with an organization's fields: checked by `npm run typecheck` (packages/client's
 * tsconfig includes test/), never run. Each `@ts-expect-error` is a mistake the compiler must catch; an
 * unused one is itself an error, so the file proves both what compiles and what does not.
 */
import {
  type CrmClient,
  type CrmRestClient,
  createCrmClient,
  createCrmRestClient,
  type Deal,
  type Filter,
} from '../../src/index.ts';
import type { OrgFields } from './org-fields.ts';

/** True when A and B are the same type. */
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const same = <A, B>(_: Same<A, B>) => {};

declare const options: { baseUrl: string; apiKey: string };

export async function typedTrpc() {
  const crm = createCrmClient<OrgFields>(options);

  // Reads: each value typed by its field; required without a default is always there.
  const { data: deal } = await crm.deals.get.query({ id: 'x' });
  same<typeof deal.deal.custom.arr, number>(true);
  same<typeof deal.deal.custom.region, 'emea' | 'apac' | 'amer' | undefined>(true);
  same<typeof deal.deal.custom.tags, Array<'vip' | 'partner'> | undefined>(true);
  same<typeof deal.deal.custom.tier, 'gold' | 'silver' | undefined>(true);
  same<typeof deal.deal.custom.signed_on, string | undefined>(true);
  same<typeof deal.deal.custom.renews, boolean | undefined>(true);
  same<typeof deal.deal.custom.extra, unknown>(true);
  same<typeof deal.deal.custom.legacy_code, string | undefined>(true);
  const page = await crm.deals.list.query({ limit: 10 });
  for (const d of page.data) same<typeof d.custom.arr, number>(true);
  const company = await crm.companies.get.query({ id: 'x' });
  same<typeof company.data.custom.segment, 'smb' | 'enterprise'>(true);
  const contacts = await crm.contacts.list.query({});
  same<(typeof contacts.data)[number]['custom']['seniority'], number | undefined>(true);
  // Search results carry the values of their own object.
  const found = await crm.search.query.query({ q: 'acme' });
  for (const d of found.data.deals ?? []) same<typeof d.custom.arr, number>(true);
  for (const c of found.data.contacts ?? []) same<typeof c.custom.seniority, number | undefined>(true);
  for (const c of found.data.companies ?? []) same<typeof c.custom.segment, 'smb' | 'enterprise'>(true);
  // The rest of a record is the contract's, as without the declaration.
  same<Omit<(typeof page.data)[number], 'custom'>, Omit<Deal, 'custom'>>(true);

  // Creates: required fields, active options only, no unknown key.
  await crm.deals.create.mutate({ title: 'a', custom: { arr: 1, region: 'emea', tags: ['vip'] } });
  // @ts-expect-error arr is required (no default)
  await crm.deals.create.mutate({ title: 'a', custom: { region: 'emea' } });
  // @ts-expect-error arr is a number
  await crm.deals.create.mutate({ title: 'a', custom: { arr: '120000' } });
  // @ts-expect-error amer is an archived option: read, no longer written
  await crm.deals.create.mutate({ title: 'a', custom: { arr: 1, region: 'amer' } });
  // @ts-expect-error a misspelled key
  await crm.deals.create.mutate({ title: 'a', custom: { arr: 1, regoin: 'emea' } });
  // @ts-expect-error an archived field takes no more values
  await crm.deals.create.mutate({ title: 'a', custom: { arr: 1, legacy_code: 'L-1' } });
  await crm.deals.batch.mutate({ items: [{ title: 'a', custom: { arr: 2 } }] });
  // @ts-expect-error a batch item is a create
  await crm.deals.batch.mutate({ items: [{ title: 'a', custom: { arr: 'two' } }] });
  await crm.companies.create.mutate({ name: 'Acme', custom: { segment: 'smb' } });

  // PATCH: only what changes; null clears, except a required field.
  await crm.deals.update.mutate({ id: 'x', custom: { region: null, signed_on: '2026-12-01' } });
  // @ts-expect-error a required field cannot be cleared
  await crm.deals.update.mutate({ id: 'x', custom: { arr: null } });

  // Filters: fields of the output, custom.<key>, one hop away; operators and values by type.
  await crm.deals.query.mutate({
    filter: {
      and: [
        { field: 'value', op: 'gte', value: 10_000 },
        { field: 'custom.region', op: 'in', value: ['emea', 'apac'] },
        { field: 'custom.tags', op: 'has_any', value: ['vip'] },
        { field: 'stage_type', op: 'eq', value: 'open' },
        { not: { field: 'custom.arr', op: 'between', value: [0, 100] } },
        { field: 'stakeholders.role_type', op: 'eq', value: 'champion' },
        { field: 'stakeholders.custom.seniority', op: 'gt', value: 3 },
        { field: 'company.custom.segment', op: 'eq', value: 'enterprise' },
        { field: 'custom.legacy_code', op: 'is_null', value: false },
      ],
    },
  });
  // @ts-expect-error a misspelled custom field
  await crm.deals.query.mutate({ filter: { field: 'custom.regoin', op: 'eq', value: 'emea' } });
  // @ts-expect-error a misspelled field of the output
  await crm.deals.query.mutate({ filter: { field: 'valeu', op: 'gt', value: 1 } });
  // @ts-expect-error a custom number compared with a string
  await crm.deals.query.mutate({ filter: { field: 'custom.arr', op: 'gte', value: '1000' } });
  // @ts-expect-error an option that is not the field's
  await crm.deals.query.mutate({ filter: { field: 'custom.region', op: 'eq', value: 'mars' } });
  // @ts-expect-error contains does not apply to a number
  await crm.deals.query.mutate({ filter: { field: 'custom.arr', op: 'contains', value: 1 } });
  // @ts-expect-error a contact field on deals' filter, not under stakeholders.
  await crm.deals.query.mutate({ filter: { field: 'custom.seniority', op: 'gt', value: 1 } });
  await crm.contacts.query.mutate({ filter: { field: 'deal.custom.arr', op: 'lt', value: 5 } });

  // A list's ?filter= is text: a typed tree, stringified.
  const open: Filter<OrgFields, 'deals'> = { field: 'custom.renews', op: 'eq', value: true };
  await crm.deals.list.query({ filter: JSON.stringify(open) });

  // A saved view's filter is typed by the object it is of; a list applies it by id.
  const { data: view } = await crm.views.create.mutate({
    name: 'Big EMEA',
    object: 'deals',
    filter: { field: 'custom.region', op: 'eq', value: 'emea' },
    sort: '-value',
  });
  await crm.deals.list.query({ view: view.id });
  await crm.views.create.mutate({
    name: 'Seniors',
    object: 'contacts',
    filter: { field: 'custom.seniority', op: 'gte', value: 3 },
  });
  await crm.views.create.mutate({ name: 'Calls', object: 'activities', filter: { field: 'type', op: 'eq' } });
  // @ts-expect-error a deal's custom field on a view of contacts
  await crm.views.create.mutate({
    name: 'x',
    object: 'contacts',
    filter: { field: 'custom.region', op: 'eq', value: 'emea' },
  });
  // @ts-expect-error an option that is not the field's
  await crm.views.create.mutate({
    name: 'x',
    object: 'deals',
    filter: { field: 'custom.region', op: 'eq', value: 'mars' },
  });
}

export async function typedRest() {
  const rest = createCrmRestClient<OrgFields>(options);
  const { data } = await rest.GET('/deals/{id}', { params: { path: { id: 'x' } } });
  if (data) same<typeof data.data.deal.custom.arr, number>(true);
  await rest.POST('/deals', { body: { title: 'a', custom: { arr: 1 } } });
  // @ts-expect-error arr is a number
  await rest.POST('/deals', { body: { title: 'a', custom: { arr: 'x' } } });
  await rest.PATCH('/deals/{id}', { params: { path: { id: 'x' } }, body: { custom: { region: null } } });
  await rest.POST('/deals/query', { body: { filter: { field: 'custom.arr', op: 'gt', value: 1 } } });
  // @ts-expect-error a misspelled field
  await rest.POST('/deals/query', { body: { filter: { field: 'custom.ar', op: 'gt', value: 1 } } });
  await rest.POST('/views', {
    body: { name: 'x', object: 'deals', filter: { field: 'custom.arr', op: 'gt', value: 1 } },
  });
  const misspelled = { field: 'custom.ar', op: 'gt', value: 1 } as const;
  // @ts-expect-error a misspelled field in a view's filter
  await rest.POST('/views', { body: { name: 'x', object: 'deals', filter: misspelled } });
}

export function untyped(crm: CrmClient, rest: CrmRestClient) {
  // Without a declaration, custom and filter stay as loose as before.
  void crm.deals.create.mutate({ title: 'a', custom: { anything: 'goes' } });
  void crm.deals.query.mutate({ filter: { field: 'whatever' } });
  void rest.POST('/deals', { body: { title: 'a', custom: { anything: 1 } } });
}
