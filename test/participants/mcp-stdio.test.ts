/**
 * The mcp-stdio connector against real upstreams started from node_modules
 * with `node <entry file>`: server-everything and server-memory (both
 * 2025-era servers on the v1 SDK).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createMcpStdioConnector } from '../../src/participants/mcp-upstream';
import { type UpstreamConnector, UpstreamTimeoutError } from '../../src/participants/upstream';
import { EVERYTHING_ENTRY, FIXTURES, MEMORY_ENTRY, memoryLogger } from './support/upstreams';

jest.setTimeout(60_000);

const call = { signal: new AbortController().signal, timeoutMs: 10_000 };

describe('mcp-stdio connector, server-everything', () => {
  let connector: UpstreamConnector;
  const logger = memoryLogger();

  beforeAll(async () => {
    connector = createMcpStdioConnector({
      participant: 'everything',
      command: process.execPath,
      args: [EVERYTHING_ENTRY, 'stdio'],
      env: { SOME_TOKEN: 'stdio-env-secret-marker' },
      logger,
    });
    await connector.start();
  });
  afterAll(() => connector?.close());

  it('negotiates and lists the tools', async () => {
    expect(connector.info().protocolVersion).toMatch(/^2025-/);
    const tools = await connector.listTools();
    expect(tools.map((t) => t.upstreamName)).toEqual(expect.arrayContaining(['echo', 'get-env', 'get-sum']));
  });

  it('calls echo and get-structured-content', async () => {
    expect(await connector.call('echo', { message: 'over stdio' }, call)).toEqual({
      output: { content: [{ type: 'text', text: 'Echo: over stdio' }] },
      isError: false,
    });
    const structured = await connector.call('get-structured-content', { location: 'New York' }, call);
    expect(structured.output.structuredContent).toEqual({ temperature: 33, conditions: 'Cloudy', humidity: 82 });
  });

  it('gives the child only its env, PATH and the SDK defaults', async () => {
    const result = await connector.call('get-env', {}, call);
    const text = (result.output.content as Array<{ text: string }>)[0]!.text;
    const env = JSON.parse(text) as Record<string, string>;
    const allowed = new Set(['SOME_TOKEN', 'HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER']);
    expect(Object.keys(env).filter((k) => !allowed.has(k))).toEqual([]);
    // The value reached the child; what the child gives back of it is redacted (it is a secret).
    expect(env.SOME_TOKEN).toBe('[redacted]');
    expect(env.PATH).toBe(process.env.PATH);
  });

  it('cancels a long-running call at its timeout and keeps the child', async () => {
    await expect(
      connector.call('trigger-long-running-operation', { duration: 20, steps: 20 }, { ...call, timeoutMs: 300 }),
    ).rejects.toBeInstanceOf(UpstreamTimeoutError);
    expect((await connector.call('echo', { message: 'still here' }, call)).isError).toBe(false);
  });

  it('cancels when the caller aborts', async () => {
    const aborter = new AbortController();
    const pending = connector.call(
      'trigger-long-running-operation',
      { duration: 20, steps: 20 },
      { signal: aborter.signal, timeoutMs: 30_000 },
    );
    aborter.abort();
    await expect(pending).rejects.toBeInstanceOf(UpstreamTimeoutError);
  });
});

describe('mcp-stdio connector, server-memory', () => {
  const dir = mkdtempSync(join(tmpdir(), 'p-mcp-memory-'));
  const file = join(dir, 'memory.jsonl');
  let connector: UpstreamConnector;

  beforeAll(async () => {
    connector = createMcpStdioConnector({
      participant: 'memory',
      command: process.execPath,
      args: [MEMORY_ENTRY],
      env: { MEMORY_FILE_PATH: file },
      logger: memoryLogger(),
    });
    await connector.start();
  });
  afterAll(async () => {
    await connector?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates entities and reads the graph back', async () => {
    const tools = await connector.listTools();
    const read = tools.find((t) => t.upstreamName === 'read_graph')!;
    expect(read.defaultLevel).toBe(1);
    const created = await connector.call(
      'create_entities',
      { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the first program'] }] },
      call,
    );
    expect(created.isError).toBe(false);
    const graph = await connector.call('read_graph', {}, call);
    expect(graph.isError).toBe(false);
    expect(JSON.stringify(graph.output)).toContain('wrote the first program');
    expect(readFileSync(file, 'utf8')).toContain('Ada');
  });
});

describe('mcp-stdio connector, a 2026-07-28 server (SDK v2 serveStdio)', () => {
  it('speaks 2026-07-28 and calls over it', async () => {
    const connector = createMcpStdioConnector({
      participant: 'modern',
      command: process.execPath,
      args: [join(FIXTURES, 'modern-stdio.mjs')],
      logger: memoryLogger(),
    });
    try {
      await connector.start();
      expect(connector.info().protocolVersion).toBe('2026-07-28');
      const [add] = await connector.listTools();
      expect(add).toMatchObject({ upstreamName: 'add', defaultLevel: 2 });
      expect(await connector.call('add', { a: 1, b: 2 }, call)).toEqual({
        output: { content: [{ type: 'text', text: '3' }], structuredContent: { sum: 3 } },
        isError: false,
      });
    } finally {
      await connector.close();
    }
  });
});
