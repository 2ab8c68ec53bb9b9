/**
 * The mcp-stdio connector's supervision, with tiny misbehaving servers from
 * test/fixtures/participants: a child that exits (in a call, or on its own
 * after every start), one that prints to stdout, one that floods stdout, one
 * that hangs in a call, one that ignores SIGTERM; and secrets of the child's
 * environment echoed back never reach a message or the log.
 */
import { join } from 'node:path';
import { createMcpStdioConnector, type McpStdioConnectorOptions } from '../../src/participants/mcp-upstream';
import {
  type UpstreamConnector,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
} from '../../src/participants/upstream';
import { waitFor } from '../support/poll';
import { FIXTURES, isGone, memoryLogger } from './support/upstreams';

jest.setTimeout(60_000);

const SECRET = 'stdio-secret-marker-5b1f0c';
const opts = { signal: new AbortController().signal, timeoutMs: 20_000 };

function fixture(
  name: string,
  extra: Partial<McpStdioConnectorOptions> = {},
): { connector: UpstreamConnector; logger: ReturnType<typeof memoryLogger> } {
  const logger = memoryLogger();
  const connector = createMcpStdioConnector({
    participant: name,
    command: process.execPath,
    args: [join(FIXTURES, `${name}.mjs`)],
    env: { SECRET },
    logger,
    restart: { initialMs: 100, maxMs: 800 },
    ...extra,
  });
  return { connector, logger };
}

/** The pids the fixture announced on stderr ("started PID"), oldest first. */
function pids(logger: ReturnType<typeof memoryLogger>): number[] {
  return [...logger.text().matchAll(/stderr: started (\d+)/g)].map((m) => Number(m[1]));
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe('a child that exits', () => {
  it('fails the call in flight at once, fails calls fast while down, and comes back', async () => {
    const { connector, logger } = fixture('exits');
    try {
      await connector.start();
      expect((await connector.call('echo', { message: 'up' }, opts)).isError).toBe(false);
      const started = Date.now();
      const inFlight = await failure(connector.call('exit', {}, opts));
      expect(inFlight).toBeInstanceOf(UpstreamUnavailableError);
      expect(Date.now() - started).toBeLessThan(3_000); // not at its 20 s timeout
      const whileDown = await failure(connector.call('echo', { message: 'x' }, opts));
      expect(whileDown).toBeInstanceOf(UpstreamUnavailableError);
      expect((whileDown as Error).message).toMatch(/^Participant exits is unavailable: restarting/);
      expect(logger.text()).toMatch(/exited \(code 3\)/);
      await waitFor('the child restarted', async () => {
        const r = await connector.call('echo', { message: 'back' }, opts).catch(() => undefined);
        return r?.isError === false;
      });
      expect(new Set(pids(logger)).size).toBe(2);
    } finally {
      await connector.close();
    }
  });

  it('is restarted with a doubling backoff up to the maximum, and not after close', async () => {
    const { connector, logger } = fixture('exits', { env: { EXIT_AFTER_MS: '30' } });
    await connector.start().catch(() => undefined);
    const delays = (): number[] => [...logger.text().matchAll(/restarting in (\d+) ms/g)].map((m) => Number(m[1]));
    await waitFor('five restarts', () => delays().length >= 5, 30_000);
    expect(delays().slice(0, 5)).toEqual([100, 200, 400, 800, 800]);
    await connector.close();
    const all = pids(logger);
    expect(all.every(isGone)).toBe(true);
  });
});

describe('a child that writes to stdout what is not the protocol', () => {
  it('is restarted and logged', async () => {
    const { connector, logger } = fixture('junk');
    try {
      await connector.start();
      const error = await failure(connector.call('junk', {}, opts));
      expect(error).toBeInstanceOf(UpstreamUnavailableError);
      expect(logger.text()).toMatch(/junk's process wrote non-protocol output to stdout; restarting/);
      await waitFor('the child restarted', async () => {
        const r = await connector.call('echo', { message: 'back' }, opts).catch(() => undefined);
        return r?.isError === false;
      });
    } finally {
      await connector.close();
    }
  });
});

describe('a child that floods stdout', () => {
  it('is cut off at the message bound without growing memory or blocking the event loop', async () => {
    const { connector, logger } = fixture('flood', { maxMessageBytes: 1024 * 1024 });
    let maxGap = 0;
    let last = Date.now();
    const ticker = setInterval(() => {
      const now = Date.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
    }, 10);
    try {
      await connector.start();
      const rssBefore = process.memoryUsage().rss;
      const error = await failure(connector.call('flood', {}, opts));
      expect(error).toBeInstanceOf(UpstreamUnavailableError);
      expect(logger.text()).toMatch(/flood's process flooded stdout past the message bound; restarting/);
      expect(process.memoryUsage().rss - rssBefore).toBeLessThan(100 * 1024 * 1024);
      await waitFor('the child restarted', async () => {
        const r = await connector.call('echo', { message: 'back' }, opts).catch(() => undefined);
        return r?.isError === false;
      });
      expect(maxGap).toBeLessThan(1_000);
    } finally {
      clearInterval(ticker);
      await connector.close();
    }
  });
});

describe('a child that hangs in a call', () => {
  let connector: UpstreamConnector;
  let logger: ReturnType<typeof memoryLogger>;
  beforeAll(async () => {
    ({ connector, logger } = fixture('hangs'));
    await connector.start();
  });
  afterAll(() => connector.close());

  it('is cancelled at the call timeout (notifications/cancelled reaches it)', async () => {
    const error = await failure(connector.call('hang', {}, { ...opts, timeoutMs: 300 }));
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    await waitFor('the child saw the cancellation', () => /stderr: cancelled \d+/.test(logger.text()), 10_000);
    expect((await connector.call('echo', { message: 'alive' }, opts)).isError).toBe(false);
  });

  it('never puts a secret of its environment in an error message or the log', async () => {
    const result = await connector.call('leak', {}, opts);
    expect(result.isError).toBe(true);
    expect(result.errorMessage).toBe("Participant hangs's tool leak returned an error: failed with SECRET=[redacted]");
    expect(logger.text()).toContain('my secret is [redacted]');
    expect(logger.text()).not.toContain(SECRET);
  });

  it('close() stops the child and leaves no zombie', async () => {
    await waitFor('the child announced itself', () => pids(logger).length > 0, 10_000);
    const [pid] = pids(logger);
    expect(pid).toBeDefined();
    expect(isGone(pid!)).toBe(false);
    await connector.close();
    expect(isGone(pid!)).toBe(true);
  });
});

describe('a child that ignores SIGTERM', () => {
  it('is killed after the grace', async () => {
    const { connector, logger } = fixture('hangs', { env: { SECRET, IGNORE_TERM: '1' }, killGraceMs: 300 });
    await connector.start();
    await waitFor('the child announced itself', () => pids(logger).length > 0, 10_000);
    const [pid] = pids(logger);
    const started = Date.now();
    await connector.close();
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    expect(isGone(pid!)).toBe(true);
  });
});

describe('a command that does not exist', () => {
  it('fails start() with UpstreamUnavailableError saying so', async () => {
    const connector = createMcpStdioConnector({
      participant: 'nothing',
      command: '/nonexistent/mcp-server',
      logger: memoryLogger(),
      restart: { initialMs: 100, maxMs: 200 },
    });
    try {
      const error = await failure(connector.start());
      expect(error).toBeInstanceOf(UpstreamUnavailableError);
      expect((error as Error).message).toBe('Participant nothing is unavailable: command not found');
    } finally {
      await connector.close();
    }
  });
});
