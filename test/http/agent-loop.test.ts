/**
 * examples/agent-loop.ts against the real app on a real port: the scripted
 * pipeline transcript runs end to end (definitions in, calls through
 * negotiate, the owner's approval, the retry), every request with the bearer
 * token it is given, and the effects are read back over REST.
 */
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { TEST_ADMIN_TOKEN, request } from '../support/auth';
import { type Transcript, runAgentLoop, tokenFromEnv } from '../../examples/agent-loop';
import { type TestApp, createTestApp } from '../support/test-app';
import { uniqueId } from '../support/ids';

const transcript = JSON.parse(
  readFileSync(join(__dirname, '../../examples/transcripts/pipeline.json'), 'utf8'),
) as Transcript;
const scriptedNames = transcript.turns
  .flatMap((turn) => ('tool_calls' in turn ? turn.tool_calls : []))
  .map((c) => c.name);

let t: TestApp;
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  t = await createTestApp();
  server = t.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  await t?.close();
});

afterEach(() => jest.restoreAllMocks());

describe('examples/agent-loop.ts with the pipeline transcript', () => {
  it('covers greet, create, read, summarize and add', () => {
    expect(scriptedNames).toEqual([
      'example-tool_greet',
      'data-tool_create-resource',
      'data-tool_read-resource',
      'analytics-tool_summarize-resource',
      'calculator_add',
    ]);
  });

  it('runs end to end: refused write, owner approval, retry, and the right results', async () => {
    const fetchSpy = jest.spyOn(globalThis, 'fetch');
    const conversationId = uniqueId('agent');
    const lines: string[] = [];
    const { messages, toolResults, approvals } = await runAgentLoop({
      baseUrl,
      token: TEST_ADMIN_TOKEN,
      conversationId,
      transcript,
      log: (line) => lines.push(line),
    });

    // (a) The OpenAI definitions were fetched for every model turn...
    const urls = fetchSpy.mock.calls.map(([input]) => (input instanceof Request ? input.url : String(input)));
    expect(urls.filter((u) => u.includes('/tools/definitions?format=openai'))).toHaveLength(transcript.turns.length);
    // Every request carried the token.
    for (const [, init] of fetchSpy.mock.calls) {
      expect(new Headers(init?.headers).get('authorization')).toBe(`Bearer ${TEST_ADMIN_TOKEN}`);
    }
    // ... and (b) they offer every name the model called, in the OpenAI shape.
    const defs = await request(t.app).get('/tools/definitions?format=openai').expect(200);
    const names = (defs.body.tools as { type: string; function: { name: string } }[]).map((d) => {
      expect(d.type).toBe('function');
      return d.function.name;
    });
    for (const name of scriptedNames) expect(names).toContain(name);

    const attempts = (name: string) => toolResults.filter((r) => r.name === name);
    const output = (name: string) => attempts(name).at(-1)?.result.output as Record<string, unknown> | undefined;

    // The write was refused first, the owner approved, the retry succeeded.
    const creates = attempts('data-tool_create-resource');
    expect(creates.map((r) => [r.status, r.result.success, r.result.code])).toEqual([
      [403, false, 'permission_required'],
      [200, true, undefined],
    ]);
    expect(creates[0]?.result.requiresApproval).toBe(true);
    expect(creates[0]?.result.approvalReason).toMatch(/^Permission upgrade required/);
    const approvalId = (creates[0]?.result as { approval?: { id: string } }).approval?.id;
    expect(approvals).toEqual([
      { id: approvalId, tool: 'data-tool', action: 'create-resource', reason: creates[0]?.result.approvalReason },
    ]);
    expect(lines).toContain(`service: ${creates[0]?.result.approvalReason} (approval ${approvalId})`);
    // Every negotiate attempt carried an Idempotency-Key of its own.
    const keys = fetchSpy.mock.calls
      .filter(([input]) => String(input instanceof Request ? input.url : input).endsWith('/negotiate'))
      .map(([, init]) => new Headers(init?.headers).get('idempotency-key'));
    expect(keys).toHaveLength(toolResults.length);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys.every((k) => typeof k === 'string' && k.length > 0)).toBe(true);
    expect(output('data-tool_create-resource')?.message).toBe('Resource created by data-tool');

    // The approval covered that one call: it is used, made by the loop's principal (the test admin), and
    // the tool's level never moved.
    const approval = await request(t.app).get(`/conversations/${conversationId}/approvals/${approvalId}`).expect(200);
    expect(approval.body).toMatchObject({ status: 'used', scope: 'once', decidedBy: 'admin:admin' });
    const history = await request(t.app).get(`/conversations/${conversationId}/permissions/history`).expect(200);
    expect(history.body.events).toEqual([]);

    // The resource exists, written by data-tool, and the read gave it back.
    const resource = await request(t.app).get(`/conversations/${conversationId}/resources/numbers`).expect(200);
    expect(resource.body).toMatchObject({ name: 'numbers', data: [3, 1, 4, 1, 5], createdBy: 'data-tool', version: 1 });
    expect(output('data-tool_read-resource')).toEqual(resource.body);

    // Every other call succeeded once, without approval.
    for (const name of scriptedNames.filter((n) => n !== 'data-tool_create-resource')) {
      expect(attempts(name).map((r) => [r.status, r.result.success])).toEqual([[200, true]]);
    }
    expect(output('example-tool_greet')?.message).toContain('Ada');
    expect(output('analytics-tool_summarize-resource')).toMatchObject({
      name: 'numbers',
      type: 'array',
      size: 5,
      stats: { count: 5, min: 1, max: 5, sum: 14, mean: 2.8 },
    });
    expect(output('calculator_add')).toEqual({ result: 42 });
    expect(attempts('calculator_add')[0]?.result.routing).toMatchObject({ tool: 'calculator', action: 'add' });

    // (e) Each call is answered by one tool message with its final result; the answer comes last.
    const callIds = messages.flatMap((m) => ('tool_calls' in m ? m.tool_calls.map((c) => c.id) : []));
    const toolMessages = messages.filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => m.tool_call_id)).toEqual(callIds);
    expect(toolMessages.map((m) => (JSON.parse(m.content) as { success: boolean }).success)).toEqual(
      scriptedNames.map(() => true),
    );
    expect(messages[0]).toEqual({ role: 'user', content: transcript.user });
    expect(messages.at(-1)).toEqual({ role: 'assistant', content: expect.stringContaining('42') });
  });

  it('never sends a call to a tool that was not offered', async () => {
    const conversationId = uniqueId('agent');
    const invented: Transcript = {
      user: 'Drop everything',
      turns: [{ tool_calls: [{ name: 'data-tool_drop-everything', arguments: {} }] }],
    };
    await expect(
      runAgentLoop({ baseUrl, token: TEST_ADMIN_TOKEN, conversationId, transcript: invented }),
    ).rejects.toThrow('The model called data-tool_drop-everything, which is not among the definitions');
    // negotiate would have created the conversation on first use.
    await request(t.app).get(`/conversations/${conversationId}`).expect(404);
  });

  it('when the owner declines, the model sees the refusal and nothing is written', async () => {
    const conversationId = uniqueId('agent');
    const createOnly: Transcript = {
      user: 'Store [1]',
      turns: [{ tool_calls: [{ name: 'data-tool_create-resource', arguments: { name: 'one', data: [1] } }] }],
    };
    const { messages, approvals } = await runAgentLoop({
      baseUrl,
      token: TEST_ADMIN_TOKEN,
      conversationId,
      transcript: createOnly,
      approve: async () => false,
    });
    expect(approvals).toEqual([]);
    const reply = messages.find((m) => m.role === 'tool');
    expect(JSON.parse(reply?.content ?? '{}')).toMatchObject({ success: false, code: 'permission_required' });
    await request(t.app).get(`/conversations/${conversationId}/resources/one`).expect(404);
    expect((await request(t.app).get(`/conversations/${conversationId}/permissions/history`)).body.events).toEqual([]);
  });

  it('takes its token from TOKEN, and without one says what to set', () => {
    expect(tokenFromEnv({ TOKEN: TEST_ADMIN_TOKEN })).toBe(TEST_ADMIN_TOKEN);
    expect(() => tokenFromEnv({})).toThrow(/^Set TOKEN to an API key of the service/);
    expect(() => tokenFromEnv({ TOKEN: '  ' })).toThrow(/Authorization: Bearer TOKEN/);
  });
});
