/**
 * The mcp-http connector with both protocol generations: a 2026-07-28
 * upstream (the SDK v2's serving entry) and a sessionful 2025-era one (SDK
 * v1) that forgets its sessions; per-owner header sets on connections of
 * their own.
 */
import { createMcpHttpConnector } from '../../src/participants/mcp-upstream';
import { UpstreamTimeoutError } from '../../src/participants/upstream';
import { waitFor } from '../support/poll';
import {
  type LegacyUpstream,
  type ModernUpstream,
  startLegacySessionServer,
  startModernServer,
} from './support/http-upstreams';
import { memoryLogger } from './support/upstreams';

jest.setTimeout(60_000);

const opts = { signal: new AbortController().signal, timeoutMs: 10_000 };

describe('a 2026-07-28 upstream', () => {
  let upstream: ModernUpstream;
  beforeAll(async () => {
    upstream = await startModernServer();
  });
  afterAll(() => upstream.close());

  it('speaks 2026-07-28, lists and calls with structuredContent', async () => {
    const connector = createMcpHttpConnector({ participant: 'modern', url: upstream.url, logger: memoryLogger() });
    try {
      await connector.start();
      expect(connector.info().protocolVersion).toBe('2026-07-28');
      const tools = await connector.listTools();
      const add = tools.find((t) => t.upstreamName === 'add')!;
      expect(add).toMatchObject({ title: 'Add', description: 'Adds two numbers', defaultLevel: 1 });
      expect(add.inputSchema).toMatchObject({ type: 'object', properties: { a: { type: 'number' } } });
      expect(add.definition).toMatchObject({ name: 'add', annotations: { readOnlyHint: true } });
      expect(tools.find((t) => t.upstreamName === 'slow')!.defaultLevel).toBe(3);
      const result = await connector.call('add', { a: 2, b: 3 }, opts);
      expect(result).toEqual({
        output: { content: [{ type: 'text', text: '5' }], structuredContent: { sum: 5 } },
        isError: false,
      });
    } finally {
      await connector.close();
    }
  });

  it('cancels a call past its timeout upstream', async () => {
    const connector = createMcpHttpConnector({ participant: 'modern', url: upstream.url, logger: memoryLogger() });
    try {
      const before = upstream.cancelled();
      await expect(connector.call('slow', {}, { ...opts, timeoutMs: 300 })).rejects.toBeInstanceOf(
        UpstreamTimeoutError,
      );
      await waitFor('the upstream saw the cancellation', () => upstream.cancelled() > before, 10_000);
    } finally {
      await connector.close();
    }
  });

  it('tells onToolsChanged when the upstream says its tools changed', async () => {
    const connector = createMcpHttpConnector({ participant: 'modern', url: upstream.url, logger: memoryLogger() });
    try {
      let changes = 0;
      connector.onToolsChanged(() => (changes += 1));
      await connector.start();
      // The listen stream opens with the connection; announce until it has been heard.
      await waitFor(
        'notifications/tools/list_changed',
        () => {
          if (changes === 0) upstream.addTool();
          return changes > 0;
        },
        10_000,
      );
      expect((await connector.listTools()).map((t) => t.upstreamName)).toContain('extra');
    } finally {
      await connector.close();
    }
  });
});

describe('a sessionful 2025-era upstream', () => {
  let upstream: LegacyUpstream;
  beforeAll(async () => {
    upstream = await startLegacySessionServer();
  });
  afterAll(() => upstream.close());

  it('reuses one session, and initialises again once when the upstream forgot it', async () => {
    const connector = createMcpHttpConnector({ participant: 'legacy', url: upstream.url, logger: memoryLogger() });
    try {
      await connector.start();
      expect(connector.info().protocolVersion).toMatch(/^2025-/);
      const initsAfterStart = upstream.initializeCount();
      expect((await connector.call('echo', { message: 'a' }, opts)).output).toEqual({
        content: [{ type: 'text', text: 'Echo: a' }],
      });
      expect((await connector.call('echo', { message: 'b' }, opts)).isError).toBe(false);
      expect(upstream.initializeCount()).toBe(initsAfterStart); // no handshake per call
      upstream.forgetSessions();
      const again = await connector.call('echo', { message: 'c' }, opts);
      expect(again.output).toEqual({ content: [{ type: 'text', text: 'Echo: c' }] });
      expect(upstream.initializeCount()).toBe(initsAfterStart + 1);
      // Calls at once on a forgotten session: one new handshake, every call answered.
      upstream.forgetSessions();
      const many = await Promise.all(['d', 'e', 'f', 'g'].map((m) => connector.call('echo', { message: m }, opts)));
      expect(many.map((r) => r.output)).toEqual(
        ['d', 'e', 'f', 'g'].map((m) => ({ content: [{ type: 'text', text: `Echo: ${m}` }] })),
      );
      expect(upstream.initializeCount()).toBe(initsAfterStart + 2);
    } finally {
      await connector.close();
    }
  });

  it('sends the participant headers on every request, and a call`s own headers instead on a connection of their own', async () => {
    const connector = createMcpHttpConnector({
      participant: 'legacy',
      url: upstream.url,
      headers: { Authorization: 'Bearer participant-token', 'X-Team': 'blue' },
      logger: memoryLogger(),
    });
    try {
      await connector.start();
      const owner = { Authorization: 'Bearer owner-token' };
      const mark = upstream.requests.length;
      const initsBefore = upstream.initializeCount();
      await connector.call('echo', { message: 'owner 1' }, { ...opts, headers: owner });
      await connector.call('echo', { message: 'owner 2' }, { ...opts, headers: { ...owner } });
      await connector.call('echo', { message: 'participant' }, opts);
      const seen = upstream.requests.slice(mark);
      const ownerRequests = seen.filter((r) => r.headers.authorization === 'Bearer owner-token');
      const participantRequests = seen.filter((r) => r.headers.authorization === 'Bearer participant-token');
      expect(ownerRequests.length + participantRequests.length).toBe(seen.length);
      expect(ownerRequests.every((r) => r.headers['x-team'] === undefined)).toBe(true);
      expect(participantRequests.every((r) => r.headers['x-team'] === 'blue')).toBe(true);
      expect(participantRequests.length).toBeGreaterThan(0);
      // The owner's header set got one handshake of its own, reused by its second call.
      expect(upstream.initializeCount()).toBe(initsBefore + 1);
    } finally {
      await connector.close();
    }
  });

  it('keeps at most maxCredentialConnections header sets, closing the least recently used', async () => {
    const connector = createMcpHttpConnector({
      participant: 'legacy',
      url: upstream.url,
      logger: memoryLogger(),
      maxCredentialConnections: 2,
    });
    const as = (who: string) => ({ ...opts, headers: { Authorization: `Bearer ${who}` } });
    try {
      const inits = upstream.initializeCount();
      await connector.call('echo', { message: '1' }, as('one'));
      await connector.call('echo', { message: '2' }, as('two'));
      await connector.call('echo', { message: '1 again' }, as('one')); // reused; 'two' is now the oldest
      expect(upstream.initializeCount()).toBe(inits + 2);
      await connector.call('echo', { message: '3' }, as('three')); // evicts 'two'
      await connector.call('echo', { message: '1 still' }, as('one'));
      expect(upstream.initializeCount()).toBe(inits + 3);
      await connector.call('echo', { message: '2 back' }, as('two')); // a new handshake for 'two'
      expect(upstream.initializeCount()).toBe(inits + 4);
    } finally {
      await connector.close();
    }
  });
});
