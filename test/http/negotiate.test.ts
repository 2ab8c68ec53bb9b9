/**
 * POST /conversations/{id}/negotiate, checked against API.md ("Negotiate")
 * as an outside client would: one test per outcome row of the contract's
 * table, then routing, alignment, dryRun, the special actions, first-use
 * conversations and third-party tools from TOOLS_DIR.
 */
import type supertest from 'supertest';
import { request } from '../support/auth';
import { type TestApp, createTestApp } from '../support/test-app';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { uniqueId } from '../support/ids';
import { BUNDLED_TOOLS } from '../support/fixtures';

const RESOURCE_MAX_BYTES = 1024;
const BUNDLED = BUNDLED_TOOLS;

const BOOM_TOOL = `module.exports = ({ defineTool, defineAction, z }) => defineTool({ name: 'boom-tool', version: '1.0.0', description: 'Throws', actions: {
  explode: defineAction({ description: 'Throws an error', level: 1, input: z.object({}), handler: async () => { throw new Error('secret internal detail'); } }) } });
`;

const CLASS_TOOL = `module.exports = ({ BaseTool }) => { class MyTool extends BaseTool { constructor() { super(MyTool.identity); } async execute(action, context) { if (action === 'read-note') return { success: true, output: { args: context.args, tool: context.toolName } }; return { success: false, error: \`Unknown action: \${action}\` }; } }
  MyTool.identity = { name: 'my-tool', version: '1.0.0', capabilities: ['read-note', 'frobnicate'] }; return MyTool; };
`;

/** A module with a syntax error: it must be skipped while the others load. */
const BROKEN_TOOL = `module.exports = ({ defineTool, defineAction, z }) => defineTool({ name: 'broken-tool', version: '1.0.0', description: 'Broken'
  actions: { oops: defineAction({ description: 'x', level: 1, input: z.object({}), handler: async () => ({}) ) } });
`;

let t: TestApp;
let toolsDir: ScratchDir;
let exportDir: ScratchDir;

beforeAll(async () => {
  toolsDir = scratchDir('negotiate-tools', {
    'boom-tool.js': BOOM_TOOL,
    'my-tool.js': CLASS_TOOL,
    'broken-tool.js': BROKEN_TOOL,
  });
  exportDir = scratchDir('negotiate-exports');
  t = await createTestApp({
    EXPORT_DIR: exportDir.path,
    RESOURCE_MAX_BYTES: String(RESOURCE_MAX_BYTES),
    TOOLS_DIR: toolsDir.path,
    TOOLS_HOT_RELOAD: 'false',
  });
});

afterAll(async () => {
  await t?.close();
  toolsDir?.remove();
  exportDir?.remove();
});

// ---- helpers -------------------------------------------------------------------

type Body = Record<string, unknown>;

function negotiate(app: TestApp['app'], conversationId: string, body: Body): supertest.Test {
  return request(app).post(`/conversations/${conversationId}/negotiate`).send(body);
}

function neg(conversationId: string, body: Body): supertest.Test {
  return negotiate(t.app, conversationId, body);
}

async function upgrade(conversationId: string, tool: string, level: number): Promise<void> {
  const res = await neg(conversationId, { action: `upgrade:${tool}:level-${level}` });
  expect(res.status).toBe(200);
  expect(res.body.success).toBe(true);
}

async function getResource(conversationId: string, name: string): Promise<supertest.Response> {
  return request(t.app).get(`/conversations/${conversationId}/resources/${name}`);
}

async function putResource(conversationId: string, name: string, data: unknown): Promise<void> {
  const res = await request(t.app).put(`/conversations/${conversationId}/resources/${name}`).send({ data });
  expect([200, 201]).toContain(res.status);
}

/** A negotiate outcome other than a malformed request is a NegotiationResult in plain JSON. */
function expectOutcome(res: supertest.Response, status: number, code: string): void {
  expect({ status: res.status, code: res.body.code, success: res.body.success }).toEqual({
    status,
    code,
    success: false,
  });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(typeof res.body.error).toBe('string');
  expect(res.body.error.length).toBeGreaterThan(0);
}

function expectSuccess(res: supertest.Response): void {
  expect({ status: res.status, success: res.body.success, code: res.body.code, error: res.body.error }).toEqual({
    status: 200,
    success: true,
    code: undefined,
    error: undefined,
  });
}

function expectProblem(res: supertest.Response, status: number, code: string): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status, code });
  expect(typeof res.body.type).toBe('string');
  expect(typeof res.body.title).toBe('string');
  expect(typeof res.body.detail).toBe('string');
}

const QUALIFIED = /^[a-z][a-z0-9]*(-[a-z0-9]+)*\/[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

interface Suggestion {
  name: string;
  confidence: number;
}

/** The contract says "close qualified actions with confidence" without naming the name field. */
function suggestionsOf(body: Body): Suggestion[] {
  const output = body.output as { suggestions?: unknown } | undefined;
  expect(output).toBeDefined();
  expect(Array.isArray(output!.suggestions)).toBe(true);
  return (output!.suggestions as Record<string, unknown>[]).map((s) => {
    const name = Object.values(s).find((v): v is string => typeof v === 'string' && QUALIFIED.test(v));
    expect(name).toBeDefined();
    expect(typeof s.confidence).toBe('number');
    return { name: name!, confidence: s.confidence as number };
  });
}

// ---- one test per outcome row of the contract's table -------------------------------

describe('negotiate outcomes (API.md table)', () => {
  it('success: 200 with routing and alignment', async () => {
    const res = await neg(uniqueId('neg'), { action: 'greet', args: { name: 'Ada' } });
    expectSuccess(res);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body.output.message).toContain('Ada');
    expect(res.body.routing).toEqual({ tool: 'example-tool', action: 'greet', confidence: 1, explicit: false });
    expect(res.body.alignment).toBe('aligned');
  });

  it('invalid_args: 400, error names the failing field', async () => {
    const c = uniqueId('neg');
    const missing = await neg(c, { action: 'read-resource', args: {} });
    expectOutcome(missing, 400, 'invalid_args');
    expect(missing.body.error).toContain('name');

    const wrongType = await neg(c, { action: 'add', tool: 'calculator', args: { a: 1, b: 'two' } });
    expectOutcome(wrongType, 400, 'invalid_args');
    expect(wrongType.body.error).toMatch(/\bb\b/);

    await upgrade(c, 'transform-tool', 2);
    await putResource(c, 'words', ['b', 'a']);
    const badEnum = await neg(c, { action: 'transform-resource', args: { name: 'words', operation: 'shuffle' } });
    expectOutcome(badEnum, 400, 'invalid_args');
    expect(badEnum.body.error).toContain('operation');
    // Nothing was written.
    const after = await getResource(c, 'words');
    expect(after.body).toMatchObject({ data: ['b', 'a'], version: 1 });
  });

  it('no_tool: 404, "No tool found for action: X", suggestions of qualified actions with confidence', async () => {
    const res = await neg(uniqueId('neg'), { action: 'archive-resource', args: { name: 'x' } });
    expectOutcome(res, 404, 'no_tool');
    expect(res.body.error).toBe('No tool found for action: archive-resource');
    const suggestions = suggestionsOf(res.body);
    expect(suggestions.length).toBeGreaterThan(0);
    for (const s of suggestions) {
      expect(s.confidence).toBeGreaterThan(0);
      expect(s.confidence).toBeLessThan(1);
    }
  });

  it('no_tool: an action nothing resembles still answers with a suggestions array', async () => {
    const res = await neg(uniqueId('neg'), { action: 'qqqzzzxxx' });
    expectOutcome(res, 404, 'no_tool');
    expect(res.body.error).toBe('No tool found for action: qqqzzzxxx');
    suggestionsOf(res.body);
  });

  it('unknown_tool: 404 when the explicit tool is unknown, in every way of naming it', async () => {
    const c = uniqueId('neg');
    expectOutcome(
      await neg(c, { action: 'read-resource', tool: 'no-such-tool', args: { name: 'x' } }),
      404,
      'unknown_tool',
    );
    expectOutcome(await neg(c, { action: 'no-such-tool/read-resource', args: { name: 'x' } }), 404, 'unknown_tool');
  });

  it('unknown_tool: 404 also when the unknown tool is named in the provider-safe form', async () => {
    // `_` never occurs inside a kebab-case name: `no-such-tool_read-resource` names tool `no-such-tool`.
    const res = await neg(uniqueId('neg'), { action: 'no-such-tool_read-resource', args: { name: 'x' } });
    expectOutcome(res, 404, 'unknown_tool');
  });

  it('unknown_tool: 404 when the named tool lacks the action', async () => {
    const c = uniqueId('neg');
    expectOutcome(
      await neg(c, { action: 'read-resource', tool: 'example-tool', args: { name: 'x' } }),
      404,
      'unknown_tool',
    );
    expectOutcome(await neg(c, { action: 'example-tool/read-resource', args: { name: 'x' } }), 404, 'unknown_tool');
    expectOutcome(await neg(c, { action: 'example-tool_read-resource', args: { name: 'x' } }), 404, 'unknown_tool');
  });

  it('ambiguous_action: 409 with the canonical candidates; naming the tool routes', async () => {
    const c = uniqueId('neg');
    const res = await neg(c, { action: 'add', args: { a: 2, b: 3 } });
    expectOutcome(res, 409, 'ambiguous_action');
    expect([...(res.body.output.candidates as string[])].sort()).toEqual(['calculator/add', 'math-service/add']);

    const canonical = await neg(c, { action: 'calculator/add', args: { a: 2, b: 3 } });
    expectSuccess(canonical);
    expect(canonical.body.output.result).toBe(5);
    expect(canonical.body.routing).toEqual({ tool: 'calculator', action: 'add', confidence: 1, explicit: true });

    const provider = await neg(c, { action: 'math-service_add', args: { a: 2, b: 3 } });
    expectSuccess(provider);
    expect(provider.body.output.result).toBe(5);
    expect(provider.body.routing).toEqual({ tool: 'math-service', action: 'add', confidence: 1, explicit: true });

    const override = await neg(c, { action: 'add', tool: 'math-service', args: { a: 2, b: 3 } });
    expectSuccess(override);
    expect(override.body.routing).toEqual({ tool: 'math-service', action: 'add', confidence: 1, explicit: true });
  });

  it('permission_required: 403, requiresApproval, approvalReason names tool, action, required and current level', async () => {
    const c = uniqueId('neg');
    const res = await neg(c, { action: 'create-resource', args: { name: 'doc', data: { a: 1 } } });
    expectOutcome(res, 403, 'permission_required');
    expect(res.body.requiresApproval).toBe(true);
    const reason = res.body.approvalReason as string;
    expect(reason.startsWith('Permission upgrade required')).toBe(true);
    expect(reason).toContain('data-tool');
    expect(reason).toContain('create-resource');
    expect(reason).toMatch(/\b2\b/); // required
    expect(reason).toMatch(/\b1\b/); // current
    expect((await getResource(c, 'doc')).status).toBe(404);

    // required 3, current 2: both numbers named
    await upgrade(c, 'export-tool', 2);
    const exec = await neg(c, { action: 'write-export', args: { name: 'doc', format: 'json', path: 'x.json' } });
    expectOutcome(exec, 403, 'permission_required');
    expect(exec.body.requiresApproval).toBe(true);
    const reason3 = exec.body.approvalReason as string;
    expect(reason3.startsWith('Permission upgrade required')).toBe(true);
    expect(reason3).toContain('export-tool');
    expect(reason3).toContain('write-export');
    expect(reason3).toMatch(/\b3\b/);
    expect(reason3).toMatch(/\b2\b/);
  });

  it('denied: 403 contradiction for a policy.deny match, and the action never runs', async () => {
    const c = uniqueId('deny');
    const created = await request(t.app)
      .post('/conversations')
      .send({ id: c, policy: { deny: ['*/delete-*', 'transform-tool/*'] } });
    expect(created.status).toBe(201);
    await upgrade(c, 'data-tool', 2);
    await upgrade(c, 'transform-tool', 2);
    await putResource(c, 'keep', ['b', 'a']);

    const del = await neg(c, { action: 'delete-resource', args: { name: 'keep' } });
    expectOutcome(del, 403, 'denied');
    expect(del.body.alignment).toBe('contradiction');
    const tr = await neg(c, { action: 'transform-resource', args: { name: 'keep', operation: 'sort' } });
    expectOutcome(tr, 403, 'denied');
    expect(tr.body.alignment).toBe('contradiction');

    const after = await getResource(c, 'keep');
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ data: ['b', 'a'], version: 1, updatedBy: 'client' });

    // Actions the policy does not match still run.
    expectSuccess(await neg(c, { action: 'read-resource', args: { name: 'keep' } }));
  });

  it('denied: a whole-tool pattern denies its writes and its reads, and nothing is created', async () => {
    const c = uniqueId('deny');
    expect(
      (
        await request(t.app)
          .post('/conversations')
          .send({ id: c, policy: { deny: ['data-tool/*'] } })
      ).status,
    ).toBe(201);
    await upgrade(c, 'data-tool', 2);
    const create = await neg(c, { action: 'create-resource', args: { name: 'blocked', data: 1 } });
    expectOutcome(create, 403, 'denied');
    expect(create.body.alignment).toBe('contradiction');
    const read = await neg(c, { action: 'data-tool/read-resource', args: { name: 'blocked' } });
    expectOutcome(read, 403, 'denied');
    expect(read.body.alignment).toBe('contradiction');
    expect((await getResource(c, 'blocked')).status).toBe(404);
    const list = await request(t.app).get(`/conversations/${c}/resources`);
    expect(list.status).toBe(200);
    expect(list.body.resources).toEqual([]);
  });

  it('denied comes before the permission check: a denied action below its level is a contradiction, not an approval', async () => {
    const c = uniqueId('deny');
    expect(
      (
        await request(t.app)
          .post('/conversations')
          .send({ id: c, policy: { deny: ['data-tool/create-*'] } })
      ).status,
    ).toBe(201);
    // data-tool is at the default level 1; create-resource needs 2. Approving would be pointless: it is denied.
    const create = await neg(c, { action: 'create-resource', args: { name: 'blocked', data: 1 } });
    expectOutcome(create, 403, 'denied');
    expect(create.body).toMatchObject({ alignment: 'contradiction' });
    expect(create.body.requiresApproval).toBeUndefined();
    expect((await getResource(c, 'blocked')).status).toBe(404);
  });

  it('resource_not_found: 404, error is "Resource not found: NAME"', async () => {
    const res = await neg(uniqueId('neg'), { action: 'read-resource', args: { name: 'missing-thing' } });
    expectOutcome(res, 404, 'resource_not_found');
    expect(res.body.error).toBe('Resource not found: missing-thing');
  });

  it('resource_exists: 409 on creating an existing resource, which keeps its data', async () => {
    const c = uniqueId('neg');
    await upgrade(c, 'data-tool', 2);
    expectSuccess(await neg(c, { action: 'create-resource', args: { name: 'dup', data: { v: 1 } } }));
    const again = await neg(c, { action: 'create-resource', args: { name: 'dup', data: { v: 2 } } });
    expectOutcome(again, 409, 'resource_exists');
    expect((await getResource(c, 'dup')).body).toMatchObject({ data: { v: 1 }, version: 1 });
  });

  it('resource_too_large: 413 over RESOURCE_MAX_BYTES, and nothing is stored', async () => {
    const c = uniqueId('neg');
    await upgrade(c, 'data-tool', 2);
    const big = 'x'.repeat(RESOURCE_MAX_BYTES + 10);
    const res = await neg(c, { action: 'create-resource', args: { name: 'big', data: big } });
    expectOutcome(res, 413, 'resource_too_large');
    expect((await getResource(c, 'big')).status).toBe(404);

    // An update over the limit leaves the old data in place.
    expectSuccess(await neg(c, { action: 'create-resource', args: { name: 'small', data: 'ok' } }));
    const upd = await neg(c, { action: 'update-resource', args: { name: 'small', data: big } });
    expectOutcome(upd, 413, 'resource_too_large');
    expect((await getResource(c, 'small')).body).toMatchObject({ data: 'ok', version: 1 });
  });

  it('tool_error: 500 with a generic message that leaks nothing of what the tool threw', async () => {
    const res = await neg(uniqueId('neg'), { action: 'explode' });
    expectOutcome(res, 500, 'tool_error');
    const text = JSON.stringify(res.body);
    expect(text).not.toContain('secret internal detail');
    expect(text).not.toMatch(/\bat .*\.js:\d+/); // no stack frames
  });

  describe('malformed requests are problem+json 400 validation_failed', () => {
    const cases: [string, unknown][] = [
      ['no action', { args: { name: 'x' } }],
      ['empty body', {}],
      ['action not a string', { action: 42 }],
      ['args not an object', { action: 'greet', args: 'hello' }],
      ['args an array', { action: 'greet', args: [1, 2] }],
      ['tool not a string', { action: 'greet', tool: 7 }],
      ['dryRun not a boolean', { action: 'greet', dryRun: 'yes' }],
      // The spec (openapi.json) declares NegotiateBody with additionalProperties: false.
      ['an unknown top-level field', { action: 'greet', explicitTool: 'example-tool' }],
    ];
    it.each(cases)('%s', async (_label, body) => {
      const c = uniqueId('neg');
      const res = await request(t.app)
        .post(`/conversations/${c}/negotiate`)
        .send(body as object);
      expectProblem(res, 400, 'validation_failed');
      expect(res.body.success).toBeUndefined();
    });

    it('an invalid conversation id', async () => {
      const res = await request(t.app).post('/conversations/bad.id/negotiate').send({ action: 'greet' });
      expectProblem(res, 400, 'validation_failed');
    });
  });
});

// ---- routing -----------------------------------------------------------------

describe('routing', () => {
  it('bare exact: confidence 1, explicit false', async () => {
    const c = uniqueId('neg');
    await putResource(c, 'doc', { hello: 'world' });
    const res = await neg(c, { action: 'read-resource', args: { name: 'doc' } });
    expectSuccess(res);
    expect(res.body.routing).toEqual({ tool: 'data-tool', action: 'read-resource', confidence: 1, explicit: false });
    expect(res.body.output).toMatchObject({ name: 'doc', data: { hello: 'world' }, createdBy: 'client', version: 1 });
  });

  it.each([
    ['canonical', { action: 'data-tool/read-resource' }],
    ['provider-safe', { action: 'data-tool_read-resource' }],
    ['tool override', { action: 'read-resource', tool: 'data-tool' }],
  ])('%s names the tool: confidence 1, explicit true', async (_label, how) => {
    const c = uniqueId('neg');
    await putResource(c, 'doc', [1, 2, 3]);
    const res = await neg(c, { ...how, args: { name: 'doc' } });
    expectSuccess(res);
    expect(res.body.routing).toEqual({ tool: 'data-tool', action: 'read-resource', confidence: 1, explicit: true });
    expect(res.body.output).toMatchObject({ name: 'doc', data: [1, 2, 3] });
  });

  it.each([
    ['readResource', 0.9],
    ['READ_RESOURCE', 0.9],
    ['read resource', 0.9],
    ['fetch-resource', 0.8],
    ['get-resource', 0.8],
  ])('approximate %s executes read-resource with %p <= confidence < 1', async (action, min) => {
    const c = uniqueId('neg');
    await putResource(c, 'doc', 'text');
    const res = await neg(c, { action, args: { name: 'doc' } });
    expectSuccess(res);
    expect(res.body.output).toMatchObject({ name: 'doc', data: 'text' });
    expect(res.body.routing.tool).toBe('data-tool');
    expect(res.body.routing.action).toBe('read-resource');
    expect(res.body.routing.explicit).toBe(false);
    expect(res.body.routing.confidence).toBeGreaterThanOrEqual(min);
    expect(res.body.routing.confidence).toBeLessThan(1);
  });

  it('an approximate write is still subject to permissions', async () => {
    const c = uniqueId('neg');
    const res = await neg(c, { action: 'make-resource', args: { name: 'm', data: 1 } });
    expectOutcome(res, 403, 'permission_required');
    expect(res.body.routing).toMatchObject({ tool: 'data-tool', action: 'create-resource' });
    expect((await getResource(c, 'm')).status).toBe(404);
  });

  describe('below ROUTER_MIN_CONFIDENCE', () => {
    let strict: TestApp;
    beforeAll(async () => {
      strict = await createTestApp({ ROUTER_MIN_CONFIDENCE: '1' });
    });
    afterAll(async () => strict?.close());

    it.each([
      ['readResource', 0.9],
      ['fetch-resource', 0.8],
    ])('%s is not executed: no_tool with data-tool/read-resource suggested', async (action, min) => {
      const c = uniqueId('neg');
      const res = await negotiate(strict.app, c, { action, args: { name: 'doc' } });
      expectOutcome(res, 404, 'no_tool');
      expect(res.body.error).toBe(`No tool found for action: ${action}`);
      const hit = suggestionsOf(res.body).find((s) => s.name === 'data-tool/read-resource');
      expect(hit).toBeDefined();
      expect(hit!.confidence).toBeGreaterThanOrEqual(min);
      expect(hit!.confidence).toBeLessThan(1);
    });

    it('an exact match still executes', async () => {
      const res = await negotiate(strict.app, uniqueId('neg'), { action: 'greet' });
      expectSuccess(res);
      expect(res.body.routing.confidence).toBe(1);
    });
  });
});

// ---- alignment -----------------------------------------------------------------

describe('alignment', () => {
  it('a level-1 success is aligned, a level-2 success agnostic', async () => {
    const c = uniqueId('neg');
    const read = await neg(c, { action: 'list-resources' });
    expectSuccess(read);
    expect(read.body.alignment).toBe('aligned');
    expect(read.body.output).toEqual({ resources: [] });

    await upgrade(c, 'data-tool', 2);
    const write = await neg(c, { action: 'create-resource', args: { name: 'a1', data: { n: 1 } } });
    expectSuccess(write);
    expect(write.body.alignment).toBe('agnostic');
    expect(write.body.output.message).toBe('Resource created by data-tool');
    expect(write.body.output.resource).toMatchObject({
      name: 'a1',
      data: { n: 1 },
      createdBy: 'data-tool',
      updatedBy: 'data-tool',
      version: 1,
    });
  });

  it('a level-3 success is agnostic', async () => {
    const c = uniqueId('neg');
    await putResource(c, 'exp', [{ a: 1 }]);
    await upgrade(c, 'export-tool', 3);
    const res = await neg(c, { action: 'write-export', args: { name: 'exp', format: 'csv', path: `${c}/exp.csv` } });
    expectSuccess(res);
    expect(res.body.alignment).toBe('agnostic');
  });
});

// ---- dryRun --------------------------------------------------------------------

describe('dryRun', () => {
  it('success: 200 with routing and alignment, output absent, nothing written', async () => {
    const c = uniqueId('neg');
    await upgrade(c, 'data-tool', 2);
    const res = await neg(c, { action: 'create-resource', args: { name: 'dry', data: { a: 1 } }, dryRun: true });
    expectSuccess(res);
    expect('output' in res.body).toBe(false);
    expect(res.body.alignment).toBe('agnostic');
    expect(res.body.routing).toEqual({ tool: 'data-tool', action: 'create-resource', confidence: 1, explicit: false });
    expect((await getResource(c, 'dry')).status).toBe(404);
  });

  it('a dry update or delete changes nothing', async () => {
    const c = uniqueId('neg');
    await upgrade(c, 'data-tool', 2);
    await putResource(c, 'stay', { v: 1 });
    expectSuccess(await neg(c, { action: 'update-resource', args: { name: 'stay', data: { v: 2 } }, dryRun: true }));
    expectSuccess(await neg(c, { action: 'delete-resource', args: { name: 'stay' }, dryRun: true }));
    expect((await getResource(c, 'stay')).body).toMatchObject({ data: { v: 1 }, version: 1 });
  });

  it('a dry read of a resource answers success without output', async () => {
    const c = uniqueId('neg');
    await putResource(c, 'r', 1);
    const res = await neg(c, { action: 'read-resource', args: { name: 'r' }, dryRun: true });
    expectSuccess(res);
    expect('output' in res.body).toBe(false);
    expect(res.body.alignment).toBe('aligned');
  });

  it('a dry upgrade changes no level', async () => {
    const c = uniqueId('neg');
    await neg(c, { action: 'greet' });
    const res = await neg(c, { action: 'upgrade:data-tool:level-2', dryRun: true });
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    const perms = await request(t.app).get(`/conversations/${c}/permissions`);
    expect(perms.body.tools.find((p: { tool: string }) => p.tool === 'data-tool')).toMatchObject({
      level: 1,
      source: 'default',
    });
    expect((await request(t.app).get(`/conversations/${c}/permissions/history`)).body.events).toEqual([]);
  });

  describe('same status and body as a real call for routing and permission outcomes', () => {
    const cases: [string, Body, number][] = [
      ['no_tool', { action: 'archive-resource', args: { name: 'x' } }, 404],
      ['unknown_tool (unknown)', { action: 'no-such-tool/read-resource', args: { name: 'x' } }, 404],
      ['unknown_tool (lacks action)', { action: 'read-resource', tool: 'example-tool', args: { name: 'x' } }, 404],
      ['ambiguous_action', { action: 'add', args: { a: 1, b: 2 } }, 409],
      ['permission_required', { action: 'create-resource', args: { name: 'p', data: 1 } }, 403],
      ['denied', { action: 'delete-resource', args: { name: 'p' } }, 403],
      ['upgrade of an unknown tool', { action: 'upgrade:no-such-tool:level-2' }, 404],
      ['upgrade to a bad level', { action: 'upgrade:data-tool:level-7' }, 400],
    ];
    it.each(cases)('%s', async (_label, body, status) => {
      const c = uniqueId('dry');
      expect(
        (
          await request(t.app)
            .post('/conversations')
            .send({ id: c, policy: { deny: ['*/delete-*'] } })
        ).status,
      ).toBe(201);
      const dry = await neg(c, { ...body, dryRun: true });
      const real = await neg(c, body);
      expect(real.status).toBe(status);
      expect(dry.status).toBe(real.status);
      // The one difference: a dry run records no approval request, so it names none (API.md, Approvals).
      const { approval, ...realRest } = real.body as Record<string, unknown>;
      expect(approval === undefined).toBe(status !== 403 || body.action !== 'create-resource');
      expect(dry.body).toEqual(realRest);
    });
  });
});

// ---- special actions -----------------------------------------------------------

describe('special actions', () => {
  it('list-tools: output.tools is what GET /tools returns', async () => {
    const res = await neg(uniqueId('neg'), { action: 'list-tools' });
    expectSuccess(res);
    const tools = await request(t.app).get('/tools').expect(200);
    expect(res.body.output.tools).toEqual(tools.body.tools);
  });

  it('list-tools is never routed to a tool nor subject to policy', async () => {
    const c = uniqueId('deny');
    expect(
      (
        await request(t.app)
          .post('/conversations')
          .send({ id: c, policy: { deny: ['*/*'] } })
      ).status,
    ).toBe(201);
    const res = await neg(c, { action: 'list-tools' });
    expectSuccess(res);
    expect(Array.isArray(res.body.output.tools)).toBe(true);
    const up = await neg(c, { action: 'upgrade:data-tool:level-2' });
    expectSuccess(up);
  });

  it('upgrade:TOOL:level-N raises and lowers, returns {tool, level, previousLevel}, and is recorded oldest first', async () => {
    const c = uniqueId('neg');
    const steps: [number, number][] = [
      [2, 1],
      [3, 2],
      [1, 3],
    ];
    for (const [level, previousLevel] of steps) {
      const res = await neg(c, { action: `upgrade:data-tool:level-${level}` });
      expectSuccess(res);
      expect(res.body.output).toEqual({ tool: 'data-tool', level, previousLevel });
    }
    // Lowered back to 1: a write needs approval again.
    expectOutcome(
      await neg(c, { action: 'create-resource', args: { name: 'x', data: 1 } }),
      403,
      'permission_required',
    );

    const perms = await request(t.app).get(`/conversations/${c}/permissions`).expect(200);
    expect(perms.body.tools.find((p: { tool: string }) => p.tool === 'data-tool')).toMatchObject({
      level: 1,
      source: 'explicit',
    });

    const history = await request(t.app).get(`/conversations/${c}/permissions/history`).expect(200);
    const events = history.body.events as {
      tool: string;
      fromLevel: number;
      toLevel: number;
      at: number;
      actor: string;
    }[];
    expect(events.map((e) => [e.tool, e.fromLevel, e.toLevel])).toEqual([
      ['data-tool', 1, 2],
      ['data-tool', 2, 3],
      ['data-tool', 3, 1],
    ]);
    for (const e of events) {
      expect(typeof e.at).toBe('number');
      expect(typeof e.actor).toBe('string');
    }
    expect(events[0]!.at).toBeLessThanOrEqual(events[1]!.at);
    expect(events[1]!.at).toBeLessThanOrEqual(events[2]!.at);
  });

  it('upgrade of an unknown tool is 404 unknown_tool and changes nothing', async () => {
    const c = uniqueId('neg');
    expectSuccess(await neg(c, { action: 'greet' }));
    expectOutcome(await neg(c, { action: 'upgrade:no-such-tool:level-2' }), 404, 'unknown_tool');
    const history = await request(t.app).get(`/conversations/${c}/permissions/history`);
    expect(history.status).toBe(200);
    expect(history.body.events).toEqual([]);
  });

  it.each(['level-7', 'level-0', 'level-4', 'level-x', 'level-', 'level-2.5', 'level--1'])(
    'upgrade to %s is 400 invalid_args and changes nothing',
    async (suffix) => {
      const c = uniqueId('neg');
      expectSuccess(await neg(c, { action: 'greet' }));
      expectOutcome(await neg(c, { action: `upgrade:data-tool:${suffix}` }), 400, 'invalid_args');
      const history = await request(t.app).get(`/conversations/${c}/permissions/history`);
      expect(history.status).toBe(200);
      expect(history.body.events).toEqual([]);
      expectOutcome(
        await neg(c, { action: 'create-resource', args: { name: 'x', data: 1 } }),
        403,
        'permission_required',
      );
    },
  );

  it('an upgraded tool runs its write without approval', async () => {
    const c = uniqueId('neg');
    await upgrade(c, 'data-tool', 2);
    expectSuccess(await neg(c, { action: 'create-resource', args: { name: 'ok', data: 1 } }));
  });
});

// ---- conversations created on first use -------------------------------------

describe('first use', () => {
  it('a never-seen conversation id is created by negotiate', async () => {
    const c = uniqueId('fresh');
    expectProblem(await request(t.app).get(`/conversations/${c}`), 404, 'not_found');
    expectSuccess(await neg(c, { action: 'greet' }));
    const conv = await request(t.app).get(`/conversations/${c}`);
    expect(conv.status).toBe(200);
    expect(conv.body.id).toBe(c);
  });
});

// ---- TOOLS_DIR: a seed-style class and a broken module ---------------------

describe('TOOLS_DIR modules', () => {
  it('the broken module is absent and every other tool loads', async () => {
    const res = await request(t.app).get('/tools').expect(200);
    const names = (res.body.tools as { name: string }[]).map((x) => x.name);
    expect(names).toEqual([...BUNDLED, 'boom-tool', 'my-tool'].sort());
    expect(names).not.toContain('broken-tool');
    expect((await request(t.app).get('/tools/broken-tool')).status).toBe(404);
  });

  it('a BaseTool class shows its capabilities as actions with levels 1 and 3', async () => {
    const res = await request(t.app).get('/tools/my-tool').expect(200);
    expect(res.body).toMatchObject({ name: 'my-tool', version: '1.0.0' });
    expect([...(res.body.capabilities as string[])].sort()).toEqual(['frobnicate', 'read-note']);
    const byName = Object.fromEntries((res.body.actions as { name: string }[]).map((a) => [a.name, a]));
    expect(byName['read-note']).toMatchObject({
      qualifiedName: 'my-tool/read-note',
      providerName: 'my-tool_read-note',
      level: 1,
      alignment: 'aligned',
    });
    expect(byName['frobnicate']).toMatchObject({
      qualifiedName: 'my-tool/frobnicate',
      providerName: 'my-tool_frobnicate',
      level: 3,
      alignment: 'agnostic',
    });
  });

  it('the class runs through negotiate, with permissions like any tool', async () => {
    const c = uniqueId('neg');
    const res = await neg(c, { action: 'read-note', args: { id: 7 } });
    expectSuccess(res);
    expect(res.body.output).toEqual({ args: { id: 7 }, tool: 'my-tool' });
    expect(res.body.routing).toEqual({ tool: 'my-tool', action: 'read-note', confidence: 1, explicit: false });
    expect(res.body.alignment).toBe('aligned');

    const frob = await neg(c, { action: 'my-tool/frobnicate' });
    expectOutcome(frob, 403, 'permission_required');
    expect(frob.body.approvalReason).toContain('my-tool');
    expect(frob.body.approvalReason).toContain('frobnicate');
  });
});
