import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MODEL_TIMEOUTS_IN_A_ROW } from '@crm/ai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { aiFixtures } from './ai-fixtures.ts';
import { DRIVERS, memoryLogger, startTestServer, type TestServer } from './harness.ts';

type Mode = 'valid' | 'garbage' | 'error' | 'timeout' | 'unfitting';
// biome-ignore lint/suspicious/noExplicitAny: the facts the chains send are read loosely
type Facts = any;

/**
 * A stand-in for an OpenAI-compatible server on loopback: it answers chat completions with structured
 * output written from the facts it was sent (valid), or misbehaves as told.
 */
class FakeModelServer {
  mode: Mode = 'valid';
  requests: Array<{ path: string; body: Facts }> = [];
  private server: Server;
  private hanging: ServerResponse[] = [];

  constructor() {
    this.server = createServer((req, res) => void this.handle(req, res));
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  async stop() {
    for (const res of this.hanging) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const body = JSON.parse(raw || '{}');
    this.requests.push({ path: req.url ?? '', body });
    if (this.mode === 'timeout') {
      this.hanging.push(res);
      return;
    }
    if (this.mode === 'error') {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'model crashed', type: 'server_error' } }));
      return;
    }
    const content =
      this.mode === 'garbage' ? 'Sure! Here is my answer: it looks good.' : JSON.stringify(this.answer(body));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'chatcmpl-fake',
        object: 'chat.completion',
        created: 1_700_000_000,
        model: body.model,
        choices: [
          { index: 0, message: { role: 'assistant', content }, finish_reason: 'stop', logprobs: null },
        ],
        usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
      }),
    );
  }

  /** Reads the facts from the prompt and words them, keeping every number. */
  private answer(body: Facts) {
    const name: string = body.response_format?.json_schema?.name ?? body.tool_choice?.function?.name;
    const text: string = body.messages.map((m: { content: string }) => m.content).join('\n');
    const facts = JSON.parse(text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1));
    const drop = this.mode === 'unfitting' ? 1 : 0;
    switch (name) {
      case 'deal_analysis':
        return {
          summary: 'FAKE MODEL: this deal is in good shape according to the computed facts.',
          recommended_actions: facts.recommended_actions.slice(drop).map((a: string) => `FAKE MODEL: ${a}`),
        };
      case 'win_prediction':
        return {
          actions: facts.recommendations
            .slice(drop)
            .map((r: { action: string }) => `FAKE MODEL: ${r.action}`),
        };
      case 'daily_briefing':
        return {
          greeting: drop ? 'FAKE MODEL: hello, team!' : `FAKE MODEL: hello, team! ${facts.headline}.`,
        };
      case 'coaching':
        return { coaching_tips: facts.tips.slice(drop).map((t: string) => `FAKE MODEL: ${t}`) };
      default:
        throw new Error(`unexpected structured output ${name}`);
    }
  }
}

for (const { driver, label, skip } of DRIVERS) {
  describe.skipIf(skip)(`the language model writes the narrative on ${label}`, () => {
    let s: TestServer;
    let fake: FakeModelServer;
    let fx: ReturnType<typeof aiFixtures>;
    let dealId: string;
    const serverLog = memoryLogger();

    beforeAll(async () => {
      fake = new FakeModelServer();
      const baseUrl = await fake.start();
      s = await startTestServer(
        driver,
        {
          CRM_AI_MODEL: 'fake-model',
          CRM_AI_BASE_URL: baseUrl,
          CRM_AI_API_KEY: 'sk-test',
          CRM_AI_TIMEOUT_MS: '400',
        },
        { logger: serverLog.logger },
      );
      fx = aiFixtures(s, s.orgA);
      dealId = (await fx.deal('Narrated deal', true)).id;
    });
    afterAll(async () => {
      await s?.stop();
      await fake?.stop();
    });
    beforeEach(() => {
      fake.requests = [];
    });

    async function all() {
      const analysis = await s.api(`/deals/${dealId}/analyze`, { method: 'POST' });
      const prediction = await s.api(`/deals/${dealId}/predict`, { method: 'POST' });
      const briefing = await s.api('/briefing');
      const coaching = await s.api('/coaching');
      for (const res of [analysis, prediction, briefing, coaching]) expect(res.status, res.text).toBe(200);
      return {
        analysis: analysis.body.data,
        prediction: prediction.body.data,
        briefing: briefing.body.data,
        coaching: coaching.body.data,
      };
    }

    it('uses a valid structured answer for the summary, actions, greeting and tips', async () => {
      fake.mode = 'valid';
      const out = await all();
      expect(fake.requests.map((r) => r.path)).toEqual(Array(4).fill('/v1/chat/completions'));
      expect(fake.requests[0]?.body).toMatchObject({
        model: 'fake-model',
        response_format: { type: 'json_schema' },
      });
      expect(out.analysis.summary).toBe(
        'FAKE MODEL: this deal is in good shape according to the computed facts.',
      );
      expect(out.analysis.recommended_actions.length).toBeGreaterThan(0);
      for (const a of out.analysis.recommended_actions) expect(a).toMatch(/^FAKE MODEL: /);
      for (const r of out.prediction.recommendations) expect(r.action).toMatch(/^FAKE MODEL: /);
      expect(out.briefing.greeting).toMatch(/^FAKE MODEL: hello, team! 1 deal active/);
      for (const t of out.coaching.coaching_tips) expect(t).toMatch(/^FAKE MODEL: /);
      // The numbers are never the model's: score, probability and lists are the computed ones.
      expect(out.analysis.pillar_analyses).toHaveLength(8);
      const [stored] = await s.sql<{ narrative_source: string }>(
        'select narrative_source from deal_analyses where deal_id = ? order by created_at desc limit 1',
        [dealId],
      );
      expect(stored?.narrative_source).toBe('language_model');
    });

    // Errors answered at once and answers that do not fit leave the model be: each call asks it again.
    for (const mode of ['garbage', 'error', 'unfitting'] as const) {
      it(`falls back to the built-in text when the model answers with ${mode}`, async () => {
        fake.mode = mode;
        const out = await all();
        expect(fake.requests).toHaveLength(4);
        expect(out.analysis.summary).toMatch(/^Narrated deal \(Initrode\) scores \d+(\.\d)?\/100/);
        for (const a of out.analysis.recommended_actions) expect(a).not.toMatch(/FAKE MODEL/);
        for (const r of out.prediction.recommendations) expect(r.action).not.toMatch(/FAKE MODEL/);
        expect(out.briefing.greeting).toMatch(/^Good day! Your briefing for /);
        expect(out.coaching.coaching_tips.join(' ')).not.toMatch(/FAKE MODEL/);
        const [stored] = await s.sql<{ narrative_source: string }>(
          'select narrative_source from deal_analyses where deal_id = ? order by created_at desc limit 1',
          [dealId],
        );
        expect(stored?.narrative_source).toBe('built_in');
      });
    }

    // Last: it leaves the model paused for MODEL_PAUSE_MS (30 s), longer than this server lives.
    it('a model that times out twice in a row is paused: the next calls answer at once with the built-in text', async () => {
      fake.mode = 'timeout';
      const started = performance.now();
      const analysis = await s.api(`/deals/${dealId}/analyze`, { method: 'POST' });
      const prediction = await s.api(`/deals/${dealId}/predict`, { method: 'POST' });
      // Each waited out the 400 ms timeout.
      expect(performance.now() - started).toBeGreaterThanOrEqual(2 * 400);
      expect(fake.requests).toHaveLength(MODEL_TIMEOUTS_IN_A_ROW);
      // Paused: the next calls never reach the model (so none waits for it; wall time is left out, as this
      // machine's load would decide it).
      const briefing = await s.api('/briefing');
      const coaching = await s.api('/coaching');
      const again = await s.api(`/deals/${dealId}/analyze`, { method: 'POST' });
      expect(fake.requests).toHaveLength(MODEL_TIMEOUTS_IN_A_ROW);
      for (const res of [analysis, prediction, briefing, coaching, again])
        expect(res.status, res.text).toBe(200);
      expect(analysis.body.data.summary).toMatch(/^Narrated deal \(Initrode\) scores/);
      expect(again.body.data.summary).toMatch(/^Narrated deal \(Initrode\) scores/);
      expect(briefing.body.data.greeting).toMatch(/^Good day! Your briefing for /);
      const warnings = serverLog.lines.filter((l) => /language model not answering/.test(l.msg));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatchObject({ level: 40, model: 'fake-model' });
    });
  });
}
