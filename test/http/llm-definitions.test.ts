/**
 * GET /tools/definitions and GET /tools/prompt (API.md "LLM and MCP
 * interop"), as a host handing tools to a model sees them: the bundled tools
 * plus a TOOLS_DIR tool whose name and action are at the 31-character limit.
 */
import type supertest from 'supertest';
import { request } from '../support/auth';
import { type TestApp, createTestApp } from '../support/test-app';
import { BUNDLED_TOOLS } from '../support/fixtures';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { uniqueId } from '../support/ids';

/** What OpenAI, Anthropic and MCP clients accept as a tool name. */
const PROVIDER_NAME_RE = /^[a-zA-Z0-9_-]{1,64}$/;
const LONG_TOOL = 'abcdefghij-klmnopqrst-uvwxyz-12';
const LONG_ACTION = 'long-action-name-for-the-limits';

const LONG_TOOL_MODULE = `module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: '${LONG_TOOL}', version: '1.0.0', description: 'A third-party tool with names at the length limit',
  actions: {
    '${LONG_ACTION}': defineAction({
      description: 'Stores a note',
      level: 2,
      input: z.object({ note: z.string() }),
      handler: async ({ note }) => ({ note }),
    }),
  },
});
`;

let t: TestApp;
let toolsDir: ScratchDir;

beforeAll(async () => {
  toolsDir = scratchDir('llm-definitions-tools', { 'long-names.js': LONG_TOOL_MODULE });
  t = await createTestApp({ TOOLS_DIR: toolsDir.path, TOOLS_HOT_RELOAD: 'false' });
});

afterAll(async () => {
  await t?.close();
  toolsDir?.remove();
});

// ---- helpers -------------------------------------------------------------------

type JsonSchema = { [key: string]: unknown };

/** A definition in any format: the fields of the format asked for are present. */
interface Definition {
  type?: string;
  function: { name: string; description: string; parameters: JsonSchema };
  name: string;
  description: string;
  input_schema: JsonSchema;
  inputSchema: JsonSchema;
  annotations: { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean };
}

interface ActionInfo {
  tool: string;
  name: string;
  qualifiedName: string;
  providerName: string;
  level: number;
  inputSchema: JsonSchema;
}

function expectProblem(res: supertest.Response, status: number, code: string): void {
  expect({ status: res.status, code: res.body.code }).toEqual({ status, code });
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.status).toBe(status);
  expect(typeof res.body.detail).toBe('string');
}

async function registeredActions(): Promise<ActionInfo[]> {
  const res = await request(t.app).get('/tools').expect(200);
  return (res.body.tools as { name: string; actions: Omit<ActionInfo, 'tool'>[] }[]).flatMap((tool) =>
    tool.actions.map((a) => ({ tool: tool.name, ...a })),
  );
}

async function definitions(params: Record<string, string | number> = {}): Promise<Definition[]> {
  const res = await request(t.app).get('/tools/definitions').query(params);
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.body)).toEqual(['tools']);
  return res.body.tools as Definition[];
}

/** The name, description and schema of a definition, whatever the format. */
function parts(format: string, d: Definition): { name: string; description: string; schema: JsonSchema } {
  switch (format) {
    case 'anthropic':
      return { name: d.name, description: d.description, schema: d.input_schema };
    case 'mcp':
      return { name: d.name, description: d.description, schema: d.inputSchema };
    default:
      expect(d.type).toBe('function');
      return { name: d.function.name, description: d.function.description, schema: d.function.parameters };
  }
}

async function names(params: Record<string, string | number>): Promise<string[]> {
  return (await definitions({ format: 'canonical', ...params })).map((d) => d.function.name);
}

async function createConversation(policy: { deny: string[] }): Promise<string> {
  const id = uniqueId('llm');
  await request(t.app).post('/conversations').send({ id, policy }).expect(201);
  return id;
}

const sorted = (xs: string[]): string[] => [...xs].sort();

// ---- definitions: names, schemas, descriptions ----------------------------------------

describe('GET /tools/definitions', () => {
  it.each(['openai', 'anthropic', 'mcp'])('%s: one definition per action, every name provider-safe', async (format) => {
    const actions = await registeredActions();
    const defs = await definitions({ format });
    const defNames = defs.map((d) => parts(format, d).name);
    for (const name of defNames) expect(name).toMatch(PROVIDER_NAME_RE);
    // They are the provider names of exactly the registered actions.
    expect(sorted(defNames)).toEqual(sorted(actions.map((a) => a.providerName)));
    // Including the 31 + 1 + 31 = 63-character one from TOOLS_DIR.
    expect(defNames).toContain(`${LONG_TOOL}_${LONG_ACTION}`);
  });

  it('canonical names split on "/" into exactly the actions of GET /tools; provider names map back to the same set', async () => {
    const actions = await registeredActions();
    const expected = sorted(actions.map((a) => `${a.tool} ${a.name}`));

    const canonical = await names({});
    expect(
      sorted(
        canonical.map((n) => {
          const pieces = n.split('/');
          expect(pieces).toHaveLength(2);
          return pieces.join(' ');
        }),
      ),
    ).toEqual(expected);

    for (const format of ['openai', 'anthropic', 'mcp']) {
      const provider = (await definitions({ format })).map((d) => parts(format, d).name);
      // `_` never occurs inside a kebab-case name: the first one is the separator.
      const back = provider.map((n) => `${n.slice(0, n.indexOf('_'))} ${n.slice(n.indexOf('_') + 1)}`);
      expect(sorted(back)).toEqual(expected);
    }
  });

  it('defaults to the openai format', async () => {
    const defs = await definitions();
    expect(defs.length).toBeGreaterThan(0);
    for (const d of defs) {
      expect(Object.keys(d).sort()).toEqual(['function', 'type']);
      expect(d.function.name).toMatch(PROVIDER_NAME_RE);
      expect(d.function.name).not.toContain('/');
    }
    expect(defs).toEqual(await definitions({ format: 'openai' }));
  });

  it.each(['openai', 'anthropic', 'mcp', 'canonical'])(
    '%s: args schemas are object schemas, as GET /tools publishes them',
    async (format) => {
      const byProvider = new Map((await registeredActions()).map((a) => [a.providerName, a]));
      for (const d of await definitions({ format })) {
        const { name, schema } = parts(format, d);
        const action = byProvider.get(name.replace('/', '_'))!;
        expect(action).toBeDefined();
        expect(schema.type).toBe('object');
        expect(typeof schema.properties).toBe('object');
        expect(schema.$schema).toBeUndefined();
        expect(schema).toEqual({ properties: {}, ...action.inputSchema });
      }
    },
  );

  it.each(['openai', 'anthropic', 'mcp', 'canonical'])(
    '%s: each description names the owning tool, and the other tools offering the same action',
    async (format) => {
      const actions = await registeredActions();
      const defs = new Map((await definitions({ format })).map((d) => [parts(format, d).name, parts(format, d)]));
      const nameOf = (a: ActionInfo): string => (format === 'canonical' ? a.qualifiedName : a.providerName);
      for (const a of actions) {
        const def = defs.get(nameOf(a))!;
        expect(def.description.startsWith(`[${a.tool}] `)).toBe(true);
        const others = actions.filter((o) => o.name === a.name && o.tool !== a.tool);
        for (const o of others) expect(def.description).toContain(nameOf(o));
        if (others.length === 0) expect(def.description).not.toMatch(/also offered by/);
      }
      const calculatorAdd = defs.get(format === 'canonical' ? 'calculator/add' : 'calculator_add')!;
      expect(calculatorAdd.description).toMatch(/also offered by math-service/);
      const mathAdd = defs.get(format === 'canonical' ? 'math-service/add' : 'math-service_add')!;
      expect(mathAdd.description).toMatch(/also offered by calculator/);
      expect(calculatorAdd.description).not.toBe(mathAdd.description);
    },
  );

  it('mcp: readOnlyHint exactly for level-1 actions; destructive and idempotent hints by verb', async () => {
    const levels = new Map((await registeredActions()).map((a) => [a.providerName, a.level]));
    const defs = await definitions({ format: 'mcp' });
    for (const d of defs) {
      // outputSchema for the actions that declare one: every bundled action does, this file's TOOLS_DIR tool does not.
      const bundled = BUNDLED_TOOLS.some((tool) => d.name.startsWith(`${tool}_`));
      const keys = ['annotations', 'description', 'inputSchema', 'name', ...(bundled ? ['outputSchema'] : [])];
      expect(Object.keys(d).sort()).toEqual(keys);
      expect(Object.keys(d.annotations).sort()).toEqual(['destructiveHint', 'idempotentHint', 'readOnlyHint']);
      expect(d.annotations.readOnlyHint).toBe(levels.get(d.name) === 1);
      // A read destroys nothing and can be repeated.
      if (d.annotations.readOnlyHint)
        expect(d.annotations).toMatchObject({ destructiveHint: false, idempotentHint: true });
    }
    const hints = new Map(defs.map((d) => [d.name, d.annotations]));
    expect(hints.get('data-tool_delete-resource')).toEqual({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
    });
    expect(hints.get('data-tool_create-resource')).toEqual({
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
    });
    expect(hints.get('data-tool_update-resource')).toMatchObject({ destructiveHint: true, idempotentHint: true });
    expect(hints.get('export-tool_write-export')).toMatchObject({ readOnlyHint: false, destructiveHint: true });
  });

  it('is not captured by GET /tools/{name}, which still answers', async () => {
    await request(t.app).get('/tools/calculator').expect(200);
    const res = await request(t.app).get('/tools/definitions').expect(200);
    expect(res.body.name).toBeUndefined();
    expect(Array.isArray(res.body.tools)).toBe(true);
  });
});

// ---- query and limit ---------------------------------------------------------------

describe('query ranking and limit', () => {
  it('without query, actions come sorted by qualified name', async () => {
    const all = await names({});
    expect(all).toEqual(sorted(all));
  });

  it.each([
    ['add two numbers', ['calculator/add', 'math-service/add']],
    ['delete a resource', ['data-tool/delete-resource']],
    ['export csv', ['export-tool/export-resource']],
    ['fetch a resource', ['data-tool/read-resource']],
    ['make a new resource', ['data-tool/create-resource']],
    ['integral of a polynomial', ['math-service/integrate']],
    ['how many resources are there', ['analytics-tool/count-resources']],
  ])('query %j puts %j first', async (query, expected) => {
    const ranked = await names({ query });
    expect(sorted(ranked.slice(0, expected.length))).toEqual(sorted(expected));
    // Ranking orders, it never drops: every action is still there.
    expect(sorted(ranked)).toEqual(sorted(await names({})));
  });

  it('ranks the same in every format', async () => {
    const query = 'add two numbers';
    const canonical = await names({ query });
    for (const format of ['openai', 'anthropic', 'mcp']) {
      const provider = (await definitions({ format, query })).map((d) => parts(format, d).name);
      expect(provider).toEqual(canonical.map((n) => n.replace('/', '_')));
    }
  });

  it.each([
    ['delete a resource', 3],
    ['add two numbers', 1],
    ['export csv', 5],
    ['', 4],
  ] as const)('limit keeps the top N in the same order: query %j, limit %d', async (query, limit) => {
    const all = await names({ query });
    const top = await names({ query, limit });
    expect(top).toEqual(all.slice(0, limit));
    expect(top).toHaveLength(limit);
  });

  it('accepts limit 1 and 128', async () => {
    expect(await names({ limit: 1 })).toHaveLength(1);
    expect(await names({ limit: 128 })).toEqual(await names({}));
  });

  it.each(['0', '129', '-1', '2.5', 'ten'])('limit=%s is a 400 validation problem', async (limit) => {
    const res = await request(t.app).get('/tools/definitions').query({ limit });
    expectProblem(res, 400, 'validation_failed');
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain('limit');
  });

  it.each(['xml', 'OPENAI', 'gemini', ''])('unknown format %j is a 400 validation problem', async (format) => {
    const res = await request(t.app).get('/tools/definitions').query({ format });
    expectProblem(res, 400, 'validation_failed');
    expect(Array.isArray(res.body.errors)).toBe(true);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain('format');
  });
});

// ---- conversation policy -----------------------------------------------------------

describe('conversationId', () => {
  it("leaves out what the conversation's policy denies, in every format", async () => {
    const id = await createConversation({ deny: ['data-tool/*', '*/multiply'] });
    const all = await names({});
    const expected = all.filter((n) => !n.startsWith('data-tool/') && n !== 'calculator/multiply');
    expect(expected.length).toBeLessThan(all.length);
    expect(await names({ conversationId: id })).toEqual(expected);
    for (const format of ['openai', 'anthropic', 'mcp']) {
      const provider = (await definitions({ format, conversationId: id })).map((d) => parts(format, d).name);
      expect(provider).toEqual(expected.map((n) => n.replace('/', '_')));
    }
    // Ranking and limit apply to what is left.
    const ranked = await names({ conversationId: id, query: 'delete a resource', limit: 3 });
    expect(ranked).toHaveLength(3);
    for (const n of ranked) expect(n.startsWith('data-tool/')).toBe(false);
  });

  it('a conversation without a policy sees everything', async () => {
    const id = await createConversation({ deny: [] });
    expect(await names({ conversationId: id })).toEqual(await names({}));
  });

  it('a denied duplicate is no longer offered as the alternative', async () => {
    const id = await createConversation({ deny: ['math-service/*'] });
    const defs = await definitions({ format: 'canonical', conversationId: id });
    const add = defs.find((d) => d.function.name === 'calculator/add')!;
    expect(add.function.description).not.toContain('math-service');
  });

  it('an unknown conversation is a 404 problem, a malformed id a 400', async () => {
    expectProblem(
      await request(t.app)
        .get('/tools/definitions')
        .query({ conversationId: uniqueId('nope') }),
      404,
      'not_found',
    );
    expectProblem(
      await request(t.app).get('/tools/definitions').query({ conversationId: 'bad id!' }),
      400,
      'validation_failed',
    );
  });
});

// ---- the system prompt -----------------------------------------------------------------

describe('GET /tools/prompt', () => {
  async function prompt(params: Record<string, string> = {}): Promise<string> {
    const res = await request(t.app).get('/tools/prompt').query(params).buffer(true);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
    // The raw text, not a JSON-encoded string.
    expect(res.text.startsWith('"')).toBe(false);
    expect(res.text).toContain('\n');
    return res.text;
  }

  it("is seed 000's system prompt, generated from the registry", async () => {
    const text = await prompt();
    expect(text).toContain("Tools are namespaced as 'participant/tool'");
    for (const a of await registeredActions()) expect(text).toContain(`'${a.qualifiedName}'`);
    expect(text).toMatch(/- 'calculator\/add' - Add two numbers.*\(read, level 1\)/);
    expect(text).toMatch(/- 'data-tool\/create-resource' - .*\(write, level 2\)/);
    expect(text).toMatch(/- 'export-tool\/write-export' - .*\(execute, level 3\)/);
    // Choosing between participants that offer the same tool.
    expect(text).toContain('When multiple participants offer similar tools, consider:');
    expect(text).toContain("1. The participant's description and capabilities");
    expect(text).toContain("2. The specific tool's description");
    expect(text).toContain("3. The context of the user's request");
    expect(text).toContain("- add: 'calculator/add', 'math-service/add'");
    expect(text).toContain("Always use the full 'participant/tool' name when calling tools.");
    expect(text).toContain("'participant_tool'");
    // Permission upgrades.
    expect(text).toContain('permission_required');
    expect(text).toMatch(/upgrade:[A-Za-z-]+:level-N/);
    expect(text).toMatch(/do not retry/i);
  });

  it('with conversationId: what the policy denies is absent, and current levels are given', async () => {
    const id = await createConversation({ deny: ['data-tool/*'] });
    await request(t.app).put(`/conversations/${id}/permissions/export-tool`).send({ level: 3 }).expect(200);
    const text = await prompt({ conversationId: id });
    expect(text).not.toContain('data-tool/');
    expect(text).not.toMatch(/^- data-tool/m);
    expect(text).toContain("'calculator/add'");
    expect(text).toContain("'math-service/add'");
    expect(text).toMatch(/^- export-tool \(current level in this conversation: execute, level 3\)/m);
    expect(text).toMatch(/^- calculator \(current level in this conversation: read, level 1\)/m);
    expect(text).toMatch(/'transform-tool\/transform-resource' - .*needs an upgrade first/);
  });

  it('an unknown conversation is a 404 problem', async () => {
    expectProblem(
      await request(t.app)
        .get('/tools/prompt')
        .query({ conversationId: uniqueId('nope') }),
      404,
      'not_found',
    );
  });
});
