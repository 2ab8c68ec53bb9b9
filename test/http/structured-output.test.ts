/**
 * Structured output (API.md, "LLM and MCP interop"; the tool interface's
 * `output`): an action that declares a zod output schema publishes it as JSON
 * Schema in GET /tools and MCP tools/list (`outputSchema`), and MCP results
 * carry the output as `structuredContent` (checked against it) with the same
 * JSON as text. Checked with a TOOLS_DIR tool (run in its
 * sandbox worker) and the bundled ones, over REST and with the official SDK
 * clients of both eras (which validate structuredContent against outputSchema).
 */
import type { AddressInfo } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { bearer, request } from '../support/auth';
import { closeMcpSessions } from '../../src/mcp/conversation-mcp';
import { type TestApp, createTestApp } from '../support/test-app';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { uniqueId } from '../support/ids';

const MEASURE_TOOL = `module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: 'measure-tool', version: '1.0.0', description: 'Measures text',
  actions: {
    'measure-text': defineAction({
      description: 'Length and words of text',
      level: 1,
      input: z.object({ text: z.string() }),
      output: z.object({ length: z.number().int(), words: z.array(z.string()) }),
      handler: async ({ text }) => ({ length: text.length, words: text.split(' ') }),
    }),
    'extra-keys': defineAction({
      description: 'Returns a key its schema does not declare',
      level: 1,
      input: z.object({}),
      output: z.object({ n: z.number() }),
      handler: async () => ({ n: 1, internal: 'not declared' }),
    }),
    'broken-promise': defineAction({
      description: 'Declares a number, returns a string',
      level: 1,
      input: z.object({}),
      output: z.object({ n: z.number() }),
      handler: async () => ({ n: 'not a number' }),
    }),
    'plain-text': defineAction({
      description: 'Declares no output schema',
      level: 1,
      input: z.object({ text: z.string() }),
      handler: async ({ text }) => ({ echoed: text }),
    }),
  },
});
`;

const SCALAR_OUTPUT_TOOL = `module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: 'scalar-output', version: '1.0.0', description: 'Declares a non-object output',
  actions: {
    'count-things': defineAction({
      description: 'Returns a bare number',
      level: 1,
      input: z.object({}),
      output: z.number(),
      handler: async () => 3,
    }),
  },
});
`;

let t: TestApp;
let toolsDir: ScratchDir;
let server: HttpServer;
let base: string;
const clients: Array<{ close(): Promise<void> }> = [];

beforeAll(async () => {
  toolsDir = scratchDir('structured-tools');
  toolsDir.write('measure-tool.js', MEASURE_TOOL);
  toolsDir.write('scalar-output.js', SCALAR_OUTPUT_TOOL);
  t = await createTestApp({ TOOLS_DIR: toolsDir.path });
  server = t.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const c of clients) await c.close();
  await closeMcpSessions(t.services);
  await new Promise<void>((resolve) => {
    server?.close(() => resolve());
    server?.closeAllConnections();
  });
  await t?.close();
  toolsDir?.remove();
});

const url = (id: string): URL => new URL(`${base}/conversations/${id}/mcp`);

async function modern(id: string): Promise<Client> {
  const client = new Client(
    { name: 'structured', version: '1' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(new StreamableHTTPClientTransport(url(id), { requestInit: { headers: bearer() } }));
  clients.push(client);
  return client;
}

async function legacy(id: string): Promise<ClientV1> {
  const client = new ClientV1({ name: 'structured-v1', version: '1' });
  await client.connect(new TransportV1(url(id), { requestInit: { headers: bearer() } }));
  clients.push(client);
  return client;
}

describe('GET /tools', () => {
  it('shows the output schema of the actions that declare one, as JSON Schema', async () => {
    const res = await request(t.app).get('/tools/measure-tool').expect(200);
    const actions = res.body.actions as { name: string; outputSchema?: Record<string, unknown> }[];
    const measure = actions.find((a) => a.name === 'measure-text')!;
    expect(measure.outputSchema).toEqual(
      expect.objectContaining({
        type: 'object',
        properties: { length: expect.objectContaining({ type: 'integer' }), words: expect.any(Object) },
        required: ['length', 'words'],
      }),
    );
    expect(measure.outputSchema).not.toHaveProperty('$schema');
    expect(actions.find((a) => a.name === 'plain-text')).not.toHaveProperty('outputSchema');
  });

  it('every bundled action declares one', async () => {
    const res = await request(t.app).get('/tools').expect(200);
    const bundled = (res.body.tools as { name: string; actions: { name: string; outputSchema?: unknown }[] }[]).filter(
      (tool) => !['measure-tool'].includes(tool.name),
    );
    expect(bundled.length).toBe(7);
    for (const tool of bundled) {
      for (const action of tool.actions)
        expect([tool.name, action.name, action.outputSchema]).toEqual([
          tool.name,
          action.name,
          expect.objectContaining({ type: 'object' }),
        ]);
    }
  });

  it('a module whose output schema is not an object schema is skipped', async () => {
    await request(t.app).get('/tools/scalar-output').expect(404);
  });
});

describe('over MCP', () => {
  it.each([
    ['2026-07-28 (SDK v2)', modern],
    ['2025-11-25 (SDK v1)', legacy],
  ] as const)(
    '%s: tools/list carries outputSchema; results carry structuredContent and the same JSON as text',
    async (_era, connect) => {
      const client = await connect(uniqueId('structured'));
      const { tools } = await client.listTools();
      const measure = tools.find((x) => x.name === 'measure-tool_measure-text')!;
      expect(measure.outputSchema).toEqual(expect.objectContaining({ type: 'object', required: ['length', 'words'] }));
      expect(tools.find((x) => x.name === 'calculator_add')!.outputSchema).toEqual(
        expect.objectContaining({ properties: { result: expect.objectContaining({ type: 'number' }) } }),
      );
      expect(tools.find((x) => x.name === 'measure-tool_plain-text')!.outputSchema).toBeUndefined();

      // The clients validate structuredContent against the listed outputSchema themselves.
      const result = (await client.callTool({
        name: 'measure-tool_measure-text',
        arguments: { text: 'a bc' },
      })) as CallToolResult;
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({ length: 4, words: ['a', 'bc'] });
      expect(result.content).toEqual([{ type: 'text', text: JSON.stringify(result.structuredContent) }]);
    },
  );

  it.each([
    ['2026-07-28 (SDK v2)', modern, 'measure-tool_broken-promise'],
    ['2026-07-28 (SDK v2)', modern, 'measure-tool_extra-keys'],
    ['2025-11-25 (SDK v1)', legacy, 'measure-tool_broken-promise'],
    ['2025-11-25 (SDK v1)', legacy, 'measure-tool_extra-keys'],
  ] as const)(
    '%s: %s, an output that breaks its declared schema, is an isError result (tool_error), never structuredContent',
    async (_era, connect, name) => {
      const client = await connect(uniqueId('structured-broken'));
      // Listed first, as hosts do: the clients then check results against the listed outputSchema.
      expect((await client.listTools()).tools.find((x) => x.name === name)?.outputSchema).toBeDefined();
      const result = (await client.callTool({ name, arguments: {} })) as CallToolResult;
      expect(result.isError).toBe(true);
      expect(result.structuredContent).toBeUndefined();
      expect(result._meta).toEqual(expect.objectContaining({ success: false, code: 'tool_error' }));
      expect(JSON.stringify(result.content)).toContain('does not match its outputSchema');
    },
  );
});

describe('over REST', () => {
  it("negotiate returns outputs as the tool gave them (checking is the MCP endpoint's: no work added to negotiate)", async () => {
    const id = uniqueId('structured-rest');
    const ok = await request(t.app)
      .post(`/conversations/${id}/negotiate`)
      .send({ action: 'measure-tool/measure-text', args: { text: 'x y z' } })
      .expect(200);
    expect(ok.body.output).toEqual({ length: 5, words: ['x', 'y', 'z'] });
    const broken = await request(t.app)
      .post(`/conversations/${id}/negotiate`)
      .send({ action: 'measure-tool/broken-promise', args: {} });
    expect(broken.body).toEqual(expect.objectContaining({ success: true, output: { n: 'not a number' } }));
  });
});
