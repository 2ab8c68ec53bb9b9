/**
 * The mcp-http connector against real upstreams: server-everything over
 * Streamable HTTP (a 2025-era server on the v1 SDK), started from
 * node_modules on a free port.
 */
import { createMcpHttpConnector } from '../../src/participants/mcp-upstream';
import {
  type UpstreamConnector,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
} from '../../src/participants/upstream';
import { freePort } from '../support/free-port';
import { memoryLogger, type RunningUpstream, startEverythingHttp } from './support/upstreams';

jest.setTimeout(60_000);

describe('mcp-http connector, server-everything (2025-era)', () => {
  let upstream: RunningUpstream;
  let connector: UpstreamConnector;
  const logger = memoryLogger();

  beforeAll(async () => {
    upstream = await startEverythingHttp();
    connector = createMcpHttpConnector({ participant: 'everything', url: upstream.url, logger });
    await connector.start();
  });
  afterAll(async () => {
    await connector?.close();
    await upstream?.stop();
  });

  it('negotiates the 2025-era protocol and names the server', () => {
    const info = connector.info();
    expect(info.protocolVersion).toMatch(/^2025-/);
    expect(info.serverInfo).toMatchObject({ name: 'mcp-servers/everything' });
  });

  it('lists the tools with their levels and definitions', async () => {
    const tools = await connector.listTools();
    const echo = tools.find((t) => t.upstreamName === 'echo');
    expect(echo).toBeDefined();
    expect(echo!.inputSchema.type).toBe('object');
    expect(echo!.description).not.toBe('');
    expect(echo!.definition.name).toBe('echo');
    const structured = tools.find((t) => t.upstreamName === 'get-structured-content')!;
    expect(structured.defaultLevel).toBe(1); // readOnlyHint true
    expect(structured.outputSchema).toBeDefined();
    expect(structured.definition.annotations).toMatchObject({ readOnlyHint: true });
  });

  it('calls echo over the one connection', async () => {
    const signal = new AbortController().signal;
    const result = await connector.call('echo', { message: 'hello' }, { signal, timeoutMs: 10_000 });
    expect(result).toEqual({ output: { content: [{ type: 'text', text: 'Echo: hello' }] }, isError: false });
  });

  it('gives structuredContent where the tool does', async () => {
    const signal = new AbortController().signal;
    const result = await connector.call(
      'get-structured-content',
      { location: 'Chicago' },
      { signal, timeoutMs: 10_000 },
    );
    expect(result.isError).toBe(false);
    expect(result.output.structuredContent).toMatchObject({ temperature: expect.any(Number) });
  });

  it('answers an invalid call with a safe error naming the participant', async () => {
    const signal = new AbortController().signal;
    const result = await connector.call('echo', {}, { signal, timeoutMs: 10_000 });
    expect(result.isError).toBe(true);
    expect(result.errorMessage).toMatch(/^Participant everything's tool echo /);
  });

  it('cancels a long-running call at its timeout', async () => {
    const signal = new AbortController().signal;
    const started = Date.now();
    await expect(
      connector.call('trigger-long-running-operation', { duration: 20, steps: 20 }, { signal, timeoutMs: 500 }),
    ).rejects.toBeInstanceOf(UpstreamTimeoutError);
    expect(Date.now() - started).toBeLessThan(5_000);
    // The connection is still good afterwards.
    const after = await connector.call('echo', { message: 'again' }, { signal, timeoutMs: 10_000 });
    expect(after.isError).toBe(false);
  });
});

describe('mcp-http connector, an upstream that is down', () => {
  it('fails fast with UpstreamUnavailableError, no secret in the message', async () => {
    const port = await freePort();
    const connector = createMcpHttpConnector({
      participant: 'down',
      url: `http://127.0.0.1:${port}/mcp`,
      headers: { Authorization: 'Bearer down-secret-marker-123' },
      logger: memoryLogger(),
    });
    const started = Date.now();
    const error = await connector.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(UpstreamUnavailableError);
    expect((error as Error).message).toBe('Participant down is unavailable: connection refused');
    const callError = await connector
      .call('echo', {}, { signal: new AbortController().signal, timeoutMs: 5_000 })
      .catch((e: unknown) => e);
    expect(callError).toBeInstanceOf(UpstreamUnavailableError);
    expect(Date.now() - started).toBeLessThan(5_000);
    await connector.close();
  });
});
