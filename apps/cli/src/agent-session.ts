/**
 * `npm run --silent mcp:session`: a scripted agent session against a running server's /mcp (CRM_URL,
 * default http://localhost:3000; CRM_API_KEY), as an AI agent would drive it, printing each call and a
 * condensed answer: the transcript in docs/mcp.md (A scripted agent session) comes from here.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

const url = new URL('/mcp', process.env.CRM_URL ?? 'http://localhost:3000');
const apiKey = process.env.CRM_API_KEY;
if (!apiKey) {
  process.stderr.write('set CRM_API_KEY (and CRM_URL for a server other than http://localhost:3000)\n');
  process.exit(2);
}

const say = (line: string) => process.stdout.write(`${line}\n`);
const short = (value: unknown, max = 300) => {
  const text = JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
};

const client = new Client({ name: 'crm-agent-session', version: '1.0.0' });
await client.connect(
  new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: `Bearer ${apiKey}` } } }),
);

async function call(name: string, args: Record<string, unknown>, pick: (data: unknown) => unknown) {
  say(`→ tools/call ${name} ${JSON.stringify(args)}`);
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (result.isError) say(`← error: ${(result.content[0] as { text: string }).text}`);
  else say(`← ${short(pick(result.structuredContent))}`);
  return result;
}

const { tools } = await client.listTools();
say(`→ tools/list\n← ${tools.length} tools: ${tools.map((t) => t.name).join(', ')}`);
const created = await call(
  'deals-create',
  {
    title: 'Globex platform renewal',
    company_name: 'Globex',
    value: 48000,
    notes: 'Budget approved; evaluating Initech as well',
  },
  (s) => {
    const d = (s as { data: { id: string; stage_name: string } }).data;
    return { id: d.id, stage_name: d.stage_name };
  },
);
const id = (created.structuredContent as { data: { id: string } }).data.id;
const contact = await call(
  'contacts-create',
  { deal_id: id, name: 'Dana Reyes', title: 'CFO', role_type: 'economic_buyer' },
  (s) => {
    const c = (s as { data: { id: string; name: string; role_type: string } }).data;
    return { id: c.id, name: c.name, role_type: c.role_type };
  },
);
const contactId = (contact.structuredContent as { data: { id: string } }).data.id;
await call('contacts-update', { id: contactId, engagement_level: 'high', sentiment: 'positive' }, (s) => {
  const c = (s as { data: { engagement_level: string; sentiment: string } }).data;
  return { engagement_level: c.engagement_level, sentiment: c.sentiment };
});
await call('search-query', { q: 'Globex' }, (s) => {
  const d = (s as { data: { deals?: Array<{ title: string }> } }).data;
  return { deals: d.deals?.map((x) => x.title) };
});
const predicted = await call('ai-predict', { id }, (s) => {
  const d = (
    s as {
      data: {
        win_probability: number;
        confidence: number;
        risk_factors: Array<{ description: string }>;
        positive_indicators: Array<{ description: string }>;
      };
    }
  ).data;
  return {
    win_probability: d.win_probability,
    confidence: d.confidence,
    risk: d.risk_factors[0]?.description,
    positive: d.positive_indicators[0]?.description,
  };
});
say(`  _meta: ${short(predicted._meta)}`);
await call('deals-get', { id: 'not-a-uuid' }, (s) => s);
await client.close();
