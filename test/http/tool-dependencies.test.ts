/**
 * Tool dependencies (API.md, "Shared context, M6"): an action's `requires`
 * checked by negotiate before it runs (409 dependency_unmet with the
 * producers, over REST, a dry run, an approval's retry and MCP tools/call),
 * read in the decision's own statement (no round trip added); `createdBy` and
 * `schema` requirements; a `produces` schema enforced on the write (tool_error,
 * nothing written), for an isolated TOOLS_DIR tool and an in-process one;
 * GET /tools/graph and the contracts in GET /tools; the order named in the
 * system prompt and list-tools; a cycle of contracts refused at load time,
 * and hot reload loading the tools once the cycle is gone.
 */
import { unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type supertest from 'supertest';
import { bearer, request } from '../support/auth';
import { closeMcpSessions } from '../../src/mcp/conversation-mcp';
import { type TestApp, createTestApp } from '../support/test-app';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { uniqueId } from '../support/ids';
import { serverUrl } from '../support/db-server';
import { sqlStatements } from '../support/sql-statements';
import { waitFor } from '../support/poll';

/** sales-{id} (made by data-tool, of a shape) → report-{id} (of a shape) → read-report. */
const REPORT_TOOL = `module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: 'report-tool', version: '1.0.0', description: 'Reports built from sales',
  actions: {
    'build-report': defineAction({ description: 'Builds report-{id} from sales-{id}', level: 2,
      input: z.object({ id: z.string(), bad: z.boolean().optional(), batch: z.boolean().optional() }),
      requires: [{ resource: 'sales-{id}', createdBy: 'data-tool', schema: z.object({ amounts: z.array(z.number()) }) }],
      produces: [{ resource: 'report-{id}', schema: z.object({ total: z.number() }) }],
      handler: async ({ id, bad, batch }, ctx) => {
        const sales = await ctx.sharedContext.getResource('sales-' + id);
        const total = sales.data.amounts.reduce((a, b) => a + b, 0);
        const data = bad ? { total: String(total) } : { total };
        if (!batch) return ctx.sharedContext.createResource('report-' + id, data);
        const ops = [{ op: 'create', name: 'note-' + id, data: {} }, { op: 'create', name: 'report-' + id, data }];
        return (await ctx.sharedContext.transaction(ops))[1];
      } }),
    total: defineAction({ description: 'A total, for saveAs', level: 1, input: z.object({ id: z.string() }),
      produces: [{ resource: 'total-{id}', schema: z.object({ total: z.number() }) }],
      handler: async ({ id }) => ({ total: id === 'bad' ? 'none' : 1 }) }),
    'read-report': defineAction({ description: 'Reads report-{id}', level: 1, input: z.object({ id: z.string() }),
      requires: [{ resource: 'report-{id}' }],
      handler: async ({ id }, ctx) => (await ctx.sharedContext.getResource('report-' + id)).data }),
  },
});
`;

/** Two tools each requiring what the other produces. */
function cycleTool(name: string, needs: string, makes: string): string {
  return `module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: '${name}', version: '1.0.0', description: 'Half of a cycle',
  actions: {
    step: defineAction({ description: 'Needs ${needs}, makes ${makes}', level: 2, input: z.object({}),
      ${needs ? `requires: [{ resource: '${needs}' }],` : ''}
      produces: [{ resource: '${makes}' }],
      handler: async (_args, ctx) => ctx.sharedContext.createResource('${makes}', 1) }),
  },
});
`;
}

let t: TestApp;
let toolsDir: ScratchDir;

beforeAll(async () => {
  toolsDir = scratchDir('dependency-tools', { 'report-tool.js': REPORT_TOOL });
  t = await createTestApp({ TOOLS_DIR: toolsDir.path });
});

afterAll(async () => {
  await t?.close();
  toolsDir?.remove();
});

async function conversation(...tools: string[]): Promise<string> {
  const id = uniqueId('deps');
  for (const tool of ['data-tool', ...tools]) {
    await request(t.app)
      .post(`/conversations/${id}/negotiate`)
      .send({ action: `upgrade:${tool}:level-2` })
      .expect(200);
  }
  return id;
}

function negotiate(id: string, body: Record<string, unknown>, app = t.app): supertest.Test {
  return request(app).post(`/conversations/${id}/negotiate`).send(body);
}

const PRODUCERS_OF_ANY = [
  'data-tool/create-resource',
  'data-tool/update-resource',
  'transform-tool/transform-resource',
];

describe('requires', () => {
  it('answers 409 dependency_unmet with the producers, read in the decision statement alone', async () => {
    const id = await conversation();
    const call = { action: 'analytics-tool/summarize-resource', args: { name: 'sales' } };
    let res!: supertest.Response;
    const sent = await sqlStatements(async () => (res = await negotiate(id, call)));
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({
      success: false,
      code: 'dependency_unmet',
      output: { missing: [{ resource: 'sales', producers: PRODUCERS_OF_ANY, reason: 'absent' }] },
      routing: { tool: 'analytics-tool', action: 'summarize-resource' },
    });
    expect(res.body.error).toContain('data-tool/create-resource');
    // One round trip: the requirement rode on the prefetching decision statement.
    if (serverUrl()) expect(sent).toEqual(['decision_prefetch_required']);

    await negotiate(id, { action: 'data-tool/create-resource', args: { name: 'sales', data: [1, 2] } }).expect(200);
    const ran = await sqlStatements(async () => (res = await negotiate(id, call)));
    expect(res.status).toBe(200);
    expect(res.body.output).toMatchObject({ name: 'sales', type: 'array' });
    if (serverUrl()) expect(ran).toEqual(['decision_prefetch_required']);
  });

  it('refuses a write-level consumer before its transaction begins, and a dry run alike', async () => {
    const id = await conversation('transform-tool');
    const call = { action: 'transform-tool/transform-resource', args: { name: 'words', operation: 'uppercase' } };
    let res!: supertest.Response;
    const sent = await sqlStatements(async () => (res = await negotiate(id, call)));
    expect(res.status).toBe(409);
    expect(res.body.output.missing).toEqual([
      { resource: 'words', producers: ['data-tool/create-resource', 'data-tool/update-resource'], reason: 'absent' },
    ]);
    if (serverUrl()) expect(sent).toEqual(['decision_select_required']);
    const dry = await negotiate(id, { ...call, dryRun: true }).expect(409);
    expect(dry.body.code).toBe('dependency_unmet');
  });

  it('is not kept under an Idempotency-Key: the same key runs once the resource exists', async () => {
    const id = await conversation();
    const call = { action: 'export-tool/export-resource', args: { name: 'rows', format: 'json' } };
    const keyed = (): supertest.Test =>
      request(t.app).post(`/conversations/${id}/negotiate`).set('Idempotency-Key', 'dep-1').send(call);
    expect((await keyed().expect(409)).body.code).toBe('dependency_unmet');
    await negotiate(id, { action: 'data-tool/create-resource', args: { name: 'rows', data: [1] } }).expect(200);
    const ran = await keyed().expect(200);
    expect(ran.headers['idempotent-replayed']).toBeUndefined();
    expect(JSON.parse(ran.body.output.content as string)).toEqual([1]);
  });

  it('leaves actions without requires as they were: read-resource still answers resource_not_found', async () => {
    const id = await conversation();
    const res = await negotiate(id, { action: 'data-tool/read-resource', args: { name: 'nope' } }).expect(404);
    expect(res.body.code).toBe('resource_not_found');
  });

  it('checks createdBy and the schema of the required data', async () => {
    const id = await conversation('report-tool');
    const build = { action: 'report-tool/build-report', args: { id: 'q1' } };
    await request(t.app)
      .put(`/conversations/${id}/resources/sales-q1`)
      .send({ data: { amounts: [1, 2] } })
      .expect(201);
    const byClient = await negotiate(id, build).expect(409);
    expect(byClient.body.output.missing).toEqual([
      { resource: 'sales-q1', producers: expect.arrayContaining(['data-tool/create-resource']), reason: 'created_by' },
    ]);
    await request(t.app).delete(`/conversations/${id}/resources/sales-q1`).expect(204);
    await negotiate(id, {
      action: 'data-tool/create-resource',
      args: { name: 'sales-q1', data: { amounts: 'none' } },
    }).expect(200);
    const misshapen = await negotiate(id, build).expect(409);
    expect(misshapen.body.output.missing).toMatchObject([{ resource: 'sales-q1', reason: 'schema' }]);
    await negotiate(id, {
      action: 'data-tool/update-resource',
      args: { name: 'sales-q1', data: { amounts: [4, 5] } },
    }).expect(200);
    await negotiate(id, build).expect(200);
    const read = await negotiate(id, { action: 'report-tool/read-report', args: { id: 'q1' } }).expect(200);
    expect(read.body.output).toEqual({ total: 9 });
  });

  it('refuses a retry under a once approval without spending the approval', async () => {
    const id = uniqueId('deps');
    const call = { action: 'transform-tool/transform-resource', args: { name: 'w', operation: 'trim' } };
    const refused = await negotiate(id, call).expect(403);
    const approval = refused.body.approval.id as string;
    await request(t.app).post(`/conversations/${id}/approvals/${approval}/approve`).send({ scope: 'once' }).expect(200);
    const retry = await negotiate(id, { ...call, approvalId: approval }).expect(409);
    expect(retry.body.code).toBe('dependency_unmet');
    const kept = await request(t.app).get(`/conversations/${id}/approvals/${approval}`).expect(200);
    expect(kept.body.status).toBe('approved');
    await request(t.app).put(`/conversations/${id}/resources/w`).send({ data: ' x ' }).expect(201);
    await negotiate(id, { ...call, approvalId: approval }).expect(200);
  });
});

describe('produces', () => {
  it('fails a write that breaks its schema with tool_error, writing nothing (isolated tool)', async () => {
    const id = await conversation('report-tool');
    await negotiate(id, { action: 'data-tool/create-resource', args: { name: 'sales-q2', data: { amounts: [1] } } });
    const res = await negotiate(id, { action: 'report-tool/build-report', args: { id: 'q2', bad: true } }).expect(500);
    expect(res.body.code).toBe('tool_error');
    await request(t.app).get(`/conversations/${id}/resources/report-q2`).expect(404);
  });

  it('holds inside a transaction: nothing of the batch is written', async () => {
    const id = await conversation('report-tool');
    await negotiate(id, { action: 'data-tool/create-resource', args: { name: 'sales-q3', data: { amounts: [1] } } });
    const build = (bad: boolean): supertest.Test =>
      negotiate(id, { action: 'report-tool/build-report', args: { id: 'q3', bad, batch: true } });
    const res = await build(true).expect(500);
    expect(res.body.code).toBe('tool_error');
    await request(t.app).get(`/conversations/${id}/resources/note-q3`).expect(404);
    await request(t.app).get(`/conversations/${id}/resources/report-q3`).expect(404);
    await build(false).expect(200);
    await request(t.app).get(`/conversations/${id}/resources/report-q3`).expect(200);
  });
});

describe('produces, on saveAs', () => {
  it('checks the saved result against the schema of the name it is saved under', async () => {
    const id = await conversation('report-tool');
    const total = (arg: string): supertest.Test =>
      negotiate(id, { action: 'report-tool/total', args: { id: arg }, saveAs: `total-${arg}` });
    await total('ok').expect(200);
    expect((await request(t.app).get(`/conversations/${id}/resources/total-ok`).expect(200)).body.data).toEqual({
      total: 1,
    });
    expect((await total('bad').expect(500)).body.code).toBe('tool_error');
    await request(t.app).get(`/conversations/${id}/resources/total-bad`).expect(404);
  });
});

describe('GET /tools/graph and GET /tools', () => {
  it('lists the edges from producers to consumers, no self edge', async () => {
    const res = await request(t.app).get('/tools/graph').expect(200);
    const edges = res.body.edges as { from: string; to: string; resource: string }[];
    expect(edges).toEqual(
      expect.arrayContaining([
        { from: 'data-tool/create-resource', to: 'report-tool/build-report', resource: 'sales-{id}' },
        { from: 'report-tool/build-report', to: 'report-tool/read-report', resource: 'report-{id}' },
        { from: 'data-tool/create-resource', to: 'transform-tool/transform-resource', resource: '{name}' },
        { from: 'transform-tool/transform-resource', to: 'analytics-tool/summarize-resource', resource: '{name}' },
      ]),
    );
    expect(edges.filter((e) => e.from === e.to)).toEqual([]);
    // Nothing produces into data-tool's reads: read-resource declares no requires.
    expect(edges.filter((e) => e.to.startsWith('data-tool/'))).toEqual([]);
  });

  it('publishes the contracts with JSON Schemas, and GET /tools/{name} still answers', async () => {
    const res = await request(t.app).get('/tools/report-tool').expect(200);
    const build = (res.body.actions as { name: string; requires?: unknown; produces?: unknown }[]).find(
      (a) => a.name === 'build-report',
    );
    expect(build?.requires).toEqual([
      {
        resource: 'sales-{id}',
        createdBy: 'data-tool',
        schema: expect.objectContaining({ type: 'object', required: ['amounts'] }),
      },
    ]);
    expect(build?.produces).toEqual([{ resource: 'report-{id}', schema: expect.objectContaining({ type: 'object' }) }]);
  });
});

describe('the order, for models', () => {
  it('is named in the system prompt and by list-tools', async () => {
    const prompt = await request(t.app).get('/tools/prompt').expect(200);
    const line =
      "'report-tool/build-report' needs resource `sales-{id}` created by data-tool first, from " +
      "'data-tool/create-resource' or 'data-tool/update-resource' or 'transform-tool/transform-resource'";
    expect(prompt.text).toContain(`- ${line}`);
    expect(prompt.text).toContain('dependency_unmet');
    const listed = await negotiate(uniqueId('deps'), { action: 'list-tools' }).expect(200);
    expect(listed.body.output.order).toContain(line);
  });
});

describe('MCP tools/call', () => {
  let server: HttpServer | undefined;
  afterAll(async () => {
    if (!server) return;
    await closeMcpSessions(t.services);
    await new Promise<void>((resolve) => {
      server!.close(() => resolve());
      server!.closeAllConnections();
    });
  });

  it('returns dependency_unmet as an error result with the producers', async () => {
    server = t.app.listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server!.once('listening', resolve));
    const id = await conversation();
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/conversations/${id}/mcp`);
    const client = new Client({ name: 'deps-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: bearer() } }));
    try {
      const result = (await client.callTool({
        name: 'analytics-tool_summarize-resource',
        arguments: { name: 'nothing' },
      })) as CallToolResult;
      expect(result.isError).toBe(true);
      expect(result.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('dependency_unmet') });
      expect(result._meta).toMatchObject({
        code: 'dependency_unmet',
        output: { missing: [{ resource: 'nothing', producers: PRODUCERS_OF_ANY }] },
      });
    } finally {
      await client.close();
    }
  });
});

describe('cycles', () => {
  let c: TestApp | undefined;
  let dir: ScratchDir | undefined;
  afterAll(async () => {
    await c?.close();
    dir?.remove();
  });

  async function toolNames(): Promise<string[]> {
    return ((await request(c!.app).get('/tools').expect(200)).body.tools as { name: string }[]).map((x) => x.name);
  }

  it('refuses the tools of a cycle at load time with a logged reason; hot reload loads them once it is gone', async () => {
    dir = scratchDir('dependency-cycle', {
      'cycle-a.js': cycleTool('cycle-a', 'b-out', 'a-out'),
      'cycle-b.js': cycleTool('cycle-b', 'a-out', 'b-out'),
      'report-tool.js': REPORT_TOOL,
    });
    // In-process this time: the same contracts from the module's own zod schemas.
    c = await createTestApp(
      { TOOLS_DIR: dir.path, TOOLS_HOT_RELOAD: 'true' },
      { captureLogs: true, registry: { isolateToolsDir: false } },
    );
    const names = await toolNames();
    expect(names).toContain('report-tool');
    expect(names).not.toContain('cycle-a');
    expect(names).not.toContain('cycle-b');
    for (const file of ['cycle-a.js', 'cycle-b.js']) {
      expect(c.logs).toContainEqual(
        expect.objectContaining({
          file: join(dir.path, file),
          reason: expect.stringContaining('form a cycle (cycle-a/step, cycle-b/step)'),
        }),
      );
    }
    // The in-process tool's produces schema holds too.
    const id = uniqueId('deps');
    for (const tool of ['data-tool', 'report-tool']) {
      await negotiate(id, { action: `upgrade:${tool}:level-2` }, c.app).expect(200);
    }
    await negotiate(
      id,
      { action: 'data-tool/create-resource', args: { name: 'sales-x', data: { amounts: [2] } } },
      c.app,
    );
    const bad = await negotiate(id, { action: 'report-tool/build-report', args: { id: 'x', bad: true } }, c.app);
    expect(bad.status).toBe(500);
    await request(c.app).get(`/conversations/${id}/resources/report-x`).expect(404);

    // A new file (an in-process module once required stays in jest's module registry): cycle-b without requires.
    unlinkSync(join(dir.path, 'cycle-b.js'));
    writeFileSync(join(dir.path, 'cycle-b-fixed.js'), cycleTool('cycle-b', '', 'b-out'));
    await waitFor('the cycle tools to load', async () => (await toolNames()).includes('cycle-a'));
    expect(await toolNames()).toContain('cycle-b');
  });
});
