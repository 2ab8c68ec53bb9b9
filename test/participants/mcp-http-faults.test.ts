/**
 * The mcp-http connector against upstreams that answer badly: garbage
 * instead of MCP, errors that echo the secret headers they were sent (in an
 * error result, a JSON-RPC error, an HTTP error body). A clear error, no
 * crash, and the secret in no message and no log line.
 */
import { createMcpHttpConnector } from '../../src/participants/mcp-upstream';
import { UpstreamUnavailableError } from '../../src/participants/upstream';
import { type HttpUpstream, type RawAnswer, startRawServer } from './support/http-upstreams';
import { memoryLogger } from './support/upstreams';

jest.setTimeout(60_000);

const SECRET = 'Bearer http-secret-marker-9d2e7a';
const OWNER_SECRET = 'owner-secret-marker-41c8';
const opts = { signal: new AbortController().signal, timeoutMs: 10_000 };

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe('an upstream answering garbage', () => {
  const cases: Array<[string, RawAnswer]> = [
    ['200 text/html', { status: 200, contentType: 'text/html', body: '<html><body>Welcome</body></html>' }],
    [
      '200 application/json that is not JSON',
      { status: 200, contentType: 'application/json', body: '{"jsonrpc": "2.0", oops' },
    ],
    ['200 JSON that is not JSON-RPC', { status: 200, contentType: 'application/json', body: '{"hello":"world"}' }],
    ['500 with a body', { status: 500, contentType: 'text/plain', body: 'Internal error' }],
  ];
  it.each(cases)('%s: start() throws UpstreamUnavailableError with a clear message', async (_name, answer) => {
    const upstream = await startRawServer(() => answer);
    const connector = createMcpHttpConnector({ participant: 'garbage', url: upstream.url, logger: memoryLogger() });
    try {
      const error = await failure(connector.start());
      expect(error).toBeInstanceOf(UpstreamUnavailableError);
      expect((error as Error).message).toMatch(/^Participant garbage is unavailable: /);
      const callError = await failure(connector.call('echo', {}, opts));
      expect(callError).toBeInstanceOf(UpstreamUnavailableError);
    } finally {
      await connector.close();
      await upstream.close();
    }
  });

  it('garbage in answer to a call (after a good handshake) is a clear error', async () => {
    const upstream = await startRawServer((m) =>
      m.method === 'tools/call' ? { status: 200, contentType: 'text/html', body: '<p>not MCP</p>' } : undefined,
    );
    const connector = createMcpHttpConnector({ participant: 'garbage', url: upstream.url, logger: memoryLogger() });
    try {
      await connector.start();
      const error = await failure(connector.call('echo', {}, opts));
      expect(error).toBeInstanceOf(UpstreamUnavailableError);
      expect((error as Error).message).toBe(
        'Participant garbage is unavailable: answered with something that is not MCP',
      );
    } finally {
      await connector.close();
      await upstream.close();
    }
  });
});

describe('an upstream that never answers tools/list', () => {
  it('is unavailable once the listing timeout has passed', async () => {
    const upstream = await startRawServer((m) => (m.method === 'tools/list' ? 'hold' : undefined));
    const connector = createMcpHttpConnector({
      participant: 'mute',
      url: upstream.url,
      logger: memoryLogger(),
      listTimeoutMs: 300,
    });
    try {
      await connector.start();
      const error = await failure(connector.listTools());
      expect(error).toBeInstanceOf(UpstreamUnavailableError);
      expect((error as Error).message).toBe('Participant mute is unavailable: did not list its tools in time');
    } finally {
      await connector.close();
      await upstream.close();
    }
  });
});

describe('an upstream echoing the secret headers it was sent', () => {
  let upstream: HttpUpstream;
  const logger = memoryLogger();
  const echoOf = (headers: Record<string, unknown>): string =>
    `denied: authorization=${String(headers.authorization)} x-api-key=${String(headers['x-api-key'])} ${JSON.stringify(headers)}`;

  beforeAll(async () => {
    upstream = await startRawServer((m, headers) => {
      if (m.method !== 'tools/call') return undefined;
      const name = m.params?.name;
      const text = echoOf(headers);
      if (name === 'result') {
        return {
          status: 200,
          contentType: 'application/json',
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: m.id,
            result: { content: [{ type: 'text', text }], isError: true },
          }),
        };
      }
      if (name === 'rpc') {
        return {
          status: 200,
          contentType: 'application/json',
          body: JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32602, message: text } }),
        };
      }
      return { status: name === 'http4' ? 403 : 502, contentType: 'text/plain', body: text };
    });
  });
  afterAll(() => upstream.close());

  const participantHeaders = { Authorization: SECRET, 'X-Api-Key': 'key-secret-marker-77aa' };
  const markers = [SECRET, 'http-secret-marker-9d2e7a', 'key-secret-marker-77aa', OWNER_SECRET];
  const expectClean = (text: string | undefined): void => {
    for (const marker of markers) expect(text ?? '').not.toContain(marker);
  };

  it.each([['result'], ['rpc'], ['http4'], ['http5']])('%s: the message is safe', async (tool) => {
    const connector = createMcpHttpConnector({
      participant: 'echoer',
      url: upstream.url,
      headers: participantHeaders,
      logger,
    });
    try {
      for (const headers of [undefined, { Authorization: `Bearer ${OWNER_SECRET}` }]) {
        const outcome = await connector.call(tool, {}, { ...opts, headers }).then(
          (r) => r,
          (e: unknown) => e as Error,
        );
        const message = outcome instanceof Error ? outcome.message : outcome.errorMessage;
        expect(message).toMatch(/^Participant echoer/);
        expectClean(message);
        expectClean(outcome instanceof Error ? String(outcome.stack) : JSON.stringify(outcome));
        if (outcome instanceof Error) expect(outcome.cause).toBeUndefined();
      }
    } finally {
      await connector.close();
    }
    expectClean(logger.text());
  });

  it('an error result keeps the upstream text, redacted', async () => {
    const connector = createMcpHttpConnector({
      participant: 'echoer',
      url: upstream.url,
      headers: participantHeaders,
      logger,
    });
    try {
      const result = await connector.call('result', {}, opts);
      expect(result.isError).toBe(true);
      expect(result.errorMessage).toContain(
        "Participant echoer's tool result returned an error: denied: authorization=[redacted]",
      );
    } finally {
      await connector.close();
    }
  });
});
