// A small app as an internal team would write it in a repository of its own, on the packed @crm/client:
// client-package.test.ts copies it into a new project outside this one, compiles it and runs it against a
// live server. It prints what it saw as one JSON object.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  allPages,
  CrmError,
  createCrmClient,
  createCrmRestClient,
  responseOf,
  verifyWebhook,
  type WebhookEvent,
  WebhookVerificationError,
} from '@crm/client';

const { CRM_URL: baseUrl = '', CRM_API_KEY: apiKey = '', RUN_ID: run = '' } = process.env;
const crm = createCrmClient({ baseUrl, apiKey });
const rest = createCrmRestClient({ baseUrl, apiKey });
const out: Record<string, unknown> = {};

// A webhook receiver, and a server that never answers (for the timeout).
let delivered: (delivery: { body: string; headers: IncomingHttpHeaders }) => void = () => {};
const delivery = new Promise<{ body: string; headers: IncomingHttpHeaders }>((resolve) => {
  delivered = resolve;
});
const receiver = createServer((req, res) => {
  if (req.url?.startsWith('/hang')) return;
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    res.end();
    delivered({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

// tRPC: typed input and output, and what the answer said about limits.
const created = await crm.deals.create.mutate({ title: `App deal ${run}`, value: 1200 });
const title: string = created.data.title;
const answer = responseOf(created);
out.trpc = {
  title,
  status: answer.status,
  requestId: answer.requestId,
  rateLimit: answer.rateLimit,
  apiQuota: answer.apiQuota,
};

// REST: the OpenAPI document's paths.
const got = await rest.GET('/deals/{id}', { params: { path: { id: created.data.id } } });
out.rest = { title: got.data?.data.deal.title, status: responseOf(got).status };

// A typed error.
try {
  await crm.deals.get.query({ id: '01890a5d-ac96-774b-bcce-b302099a8057' });
} catch (err) {
  if (err instanceof CrmError)
    out.error = {
      name: err.name,
      status: err.status,
      code: err.code,
      body: err.body,
      requestId: err.requestId,
    };
}

// Two searches in a row: the server allows one a second, so the second is answered 429 and retried.
const attempts: number[] = [];
for (const q of ['app', 'deal']) attempts.push(responseOf(await crm.search.query.query({ q })).attempts);
out.searchAttempts = attempts;

// A create sent twice with one Idempotency-Key creates once.
const key = `app-${run}`;
const first = await crm.deals.create.mutate({ title: `Once ${run}` }, { context: { idempotencyKey: key } });
const again = await crm.deals.create.mutate({ title: `Once ${run}` }, { context: { idempotencyKey: key } });
out.replay = { sameDeal: first.data.id === again.data.id, replayed: responseOf(again).replayed };

let listed = 0;
for await (const deal of allPages((after) => crm.deals.list.query({ limit: 2, after })))
  if (deal.id) listed++;
out.allPages = listed;

const hanging = createCrmClient({ baseUrl: `${receiverUrl}/hang`, apiKey, timeoutMs: 300 });
out.timeout = await hanging.deals.list.query({}).then(
  () => 'answered',
  (err: Error) => err.name,
);
out.abort = await Promise.all(
  [
    crm.deals.list.query({}, { signal: AbortSignal.abort() }),
    rest.GET('/deals', { signal: AbortSignal.abort() }),
  ].map((call) =>
    call.then(
      () => 'answered',
      (err: Error) => err.name,
    ),
  ),
);

// A webhook, verified and typed by its `type`.
const endpoint = await crm.webhooks.create.mutate({ url: `${receiverUrl}/hook`, events: ['deal.created'] });
const hooked = await crm.deals.create.mutate({ title: `Hooked ${run}` });
const { body, headers } = await delivery;
const event: WebhookEvent = verifyWebhook(body, headers, endpoint.data.secret);
if (event.type === 'deal.created')
  out.webhook = { type: event.type, sameDeal: event.data.id === hooked.data.id };
try {
  verifyWebhook(body.replace('Hooked', 'Forged'), headers, endpoint.data.secret);
  out.forged = 'accepted';
} catch (err) {
  out.forged = err instanceof WebhookVerificationError ? 'refused' : String(err);
}
await crm.webhooks.delete.mutate({ id: endpoint.data.id });
receiver.closeAllConnections();
receiver.close();

/** Never called: the test compiles this file once as it is and once without the directive. */
export function wrongInput() {
  // @ts-expect-error a deal's title is a string
  return crm.deals.create.mutate({ title: 42 });
}

/** An organization's fields as `crm schema types` prints them (contacts and companies left out: none). */
type OrgFields = { deals: { arr: { type: 'currency'; required: true } } };

/** Never called: the packed declarations type `custom` and `filter` by the fields (else this does not compile). */
export async function typedFields(id: string) {
  const typed = createCrmClient<OrgFields>({ baseUrl, apiKey });
  const { data } = await typed.deals.get.query({ id });
  const arr: number = data.deal.custom.arr;
  return typed.deals.query.mutate({ filter: { field: 'custom.arr', op: 'gte', value: arr } });
}

process.stdout.write(JSON.stringify(out));
