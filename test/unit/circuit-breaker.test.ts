import { ParticipantUnavailableError } from '../../src/core/remote-action';
import { CircuitBreaker, type CircuitState, backoffMs } from '../../src/participants/circuit-breaker';

class Down extends Error {}
const isDown = (err: unknown) => err instanceof Down;

function setup() {
  let t = 1_000_000;
  const clock = { now: () => t, advance: (ms: number) => (t += ms) };
  const breaker = new CircuitBreaker({ participant: 'weather', now: clock.now });
  const changes: [CircuitState, CircuitState][] = [];
  breaker.onStateChange((next, previous) => changes.push([next, previous]));
  const fail = () => breaker.run(() => Promise.reject(new Down('refused')), isDown);
  const succeed = () => breaker.run(() => Promise.resolve('ok'), isDown);
  return { breaker, clock, changes, fail, succeed };
}

async function unavailable(p: Promise<unknown>): Promise<ParticipantUnavailableError> {
  const err: unknown = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ParticipantUnavailableError);
  return err as ParticipantUnavailableError;
}

describe('CircuitBreaker', () => {
  it('stays closed through four failures and opens at the fifth in a row', async () => {
    const { breaker, fail, changes } = setup();
    for (let i = 0; i < 4; i++) await expect(fail()).rejects.toBeInstanceOf(Down);
    expect(breaker.state()).toBe('closed');
    await expect(fail()).rejects.toBeInstanceOf(Down);
    expect(breaker.state()).toBe('open');
    expect(changes).toEqual([['open', 'closed']]);
  });

  it('a success in between breaks the row', async () => {
    const { breaker, fail, succeed } = setup();
    for (let i = 0; i < 4; i++) await expect(fail()).rejects.toBeInstanceOf(Down);
    await expect(succeed()).resolves.toBe('ok');
    for (let i = 0; i < 4; i++) await expect(fail()).rejects.toBeInstanceOf(Down);
    expect(breaker.state()).toBe('closed');
    expect(breaker.consecutiveFailures()).toBe(4);
  });

  it('while open, answers at once without calling, with the seconds until the probe', async () => {
    const { breaker, clock, fail } = setup();
    for (let i = 0; i < 5; i++) await expect(fail()).rejects.toBeInstanceOf(Down);
    const fn = jest.fn(() => Promise.resolve('ok'));
    const err = await unavailable(breaker.run(fn, isDown));
    expect(fn).not.toHaveBeenCalled();
    expect(err.participant).toBe('weather');
    expect(err.code).toBe('participant_unavailable');
    expect(err.retryAfterSeconds).toBe(1);
    clock.advance(999);
    expect(() => breaker.check()).toThrow(ParticipantUnavailableError);
  });

  it('lets one probe through when the backoff elapses; its success closes and resets', async () => {
    const { breaker, clock, fail, changes } = setup();
    for (let i = 0; i < 5; i++) await expect(fail()).rejects.toBeInstanceOf(Down);
    clock.advance(1000);
    expect(breaker.state()).toBe('half-open');
    let release!: (v: string) => void;
    const probe = breaker.run(() => new Promise<string>((resolve) => (release = resolve)), isDown);
    // A second call while the probe is in flight does not reach the upstream.
    await unavailable(breaker.run(() => Promise.resolve('second'), isDown));
    release('probed');
    await expect(probe).resolves.toBe('probed');
    expect(breaker.state()).toBe('closed');
    expect(breaker.consecutiveFailures()).toBe(0);
    expect(changes).toEqual([
      ['open', 'closed'],
      ['half-open', 'open'],
      ['closed', 'half-open'],
    ]);
    // Reset: it takes five failures again to open.
    for (let i = 0; i < 4; i++) await expect(fail()).rejects.toBeInstanceOf(Down);
    expect(breaker.state()).toBe('closed');
  });

  it('a failed probe opens again with the backoff doubled, up to 60 s', async () => {
    const { breaker, clock, fail } = setup();
    for (let i = 0; i < 5; i++) await expect(fail()).rejects.toBeInstanceOf(Down);
    const seen: number[] = [];
    for (let round = 0; round < 9; round++) {
      seen.push(breaker.retryAfterSeconds());
      clock.advance(breaker.retryAfterSeconds() * 1000);
      await expect(fail()).rejects.toBeInstanceOf(Down);
      expect(breaker.state()).toBe('open');
    }
    expect(seen).toEqual([1, 2, 4, 8, 16, 32, 60, 60, 60]);
    const err = await unavailable(breaker.run(() => Promise.resolve(1), isDown));
    expect(err.retryAfterSeconds).toBe(60);
    clock.advance(30_500);
    expect((await unavailable(breaker.run(() => Promise.resolve(1), isDown))).retryAfterSeconds).toBe(30);
  });

  it('an error that does not count neither opens nor resets, and frees the probe', async () => {
    const { breaker, clock, fail, succeed } = setup();
    const neutral = () => breaker.run(() => Promise.reject(new Error('bad args')), isDown);
    for (let i = 0; i < 4; i++) await expect(fail()).rejects.toBeInstanceOf(Down);
    await expect(neutral()).rejects.toThrow('bad args');
    expect(breaker.consecutiveFailures()).toBe(4);
    await expect(fail()).rejects.toBeInstanceOf(Down);
    expect(breaker.state()).toBe('open');
    clock.advance(1000);
    await expect(neutral()).rejects.toThrow('bad args');
    expect(breaker.state()).toBe('half-open');
    await expect(succeed()).resolves.toBe('ok');
    expect(breaker.state()).toBe('closed');
  });

  it('onStateChange returns an unsubscribe function', async () => {
    const { breaker, fail } = setup();
    const listener = jest.fn();
    const off = breaker.onStateChange(listener);
    off();
    for (let i = 0; i < 5; i++) await expect(fail()).rejects.toBeInstanceOf(Down);
    expect(listener).not.toHaveBeenCalled();
  });

  it('backoffMs: 1 s doubling to 60 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 100, 10_000].map((n) => backoffMs(n))).toEqual([
      1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000, 60000,
    ]);
  });
});
