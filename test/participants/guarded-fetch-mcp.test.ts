/**
 * The guarded fetch under the MCP SDK's Streamable HTTP transport, against a
 * real MCP server (server-everything, started with node): initialize, the
 * SSE stream, tools/list and tools/call all go through it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { type GuardedFetch, createGuardedFetch } from '../../src/participants/address-rules';
import { UpstreamUnavailableError } from '../../src/participants/upstream';
import { freePort } from '../support/free-port';

const ENTRY = resolve(__dirname, '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js');

let child: ChildProcess;
let port: number;
let guarded: GuardedFetch;

beforeAll(async () => {
  port = await freePort();
  child = spawn(process.execPath, [ENTRY, 'streamableHttp'], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  await new Promise<void>((ready, fail) => {
    let err = '';
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      if (err.includes('listening on port')) ready();
    });
    child.once('exit', (code) => fail(new Error(`server-everything exited (${code}): ${err}`)));
  });
  guarded = createGuardedFetch({ allowedHosts: [] });
}, 30_000);

afterAll(async () => {
  await guarded.close();
  if (child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
});

it('carries an MCP session: initialize, tools/list, tools/call', async () => {
  const seen: string[] = [];
  const recording: typeof fetch = (input, init) => {
    seen.push(`${init?.method ?? 'GET'} ${new URL(input instanceof Request ? input.url : input).pathname}`);
    return guarded(input, init);
  };
  const client = new Client({ name: 'guarded-fetch-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://localhost:${port}/mcp`), { fetch: recording }),
  );
  try {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('echo');
    const result = await client.callTool({ name: 'echo', arguments: { message: 'through the guard' } });
    expect(JSON.stringify(result.content)).toContain('through the guard');
    // initialize, initialized, tools/list, tools/call; and the standalone SSE stream (GET).
    expect(seen.filter((s) => s === 'POST /mcp').length).toBeGreaterThanOrEqual(4);
    expect(seen).toContain('GET /mcp');
  } finally {
    await client.close();
  }
}, 30_000);

it('refuses, through the SDK, a server whose name resolves to a metadata address', async () => {
  const f = createGuardedFetch({
    allowedHosts: [],
    lookup: () => Promise.resolve([{ address: '169.254.169.254', family: 4 }]),
  });
  const client = new Client({ name: 'guarded-fetch-test', version: '1.0.0' });
  try {
    const err = await client
      .connect(new StreamableHTTPClientTransport(new URL(`http://mcp.test:${port}/mcp`), { fetch: f }))
      .catch((e: unknown) => e);
    let e: unknown = err;
    while (e instanceof Error && !(e instanceof UpstreamUnavailableError)) e = e.cause;
    expect(e).toBeInstanceOf(UpstreamUnavailableError);
  } finally {
    await client.close().catch(() => undefined);
    await f.close();
  }
});
