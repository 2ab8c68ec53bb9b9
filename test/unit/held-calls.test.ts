/**
 * The held calls' rules without a database: `Prefer: wait` as RFC 7240 reads
 * it (first `wait` wins, a malformed one is ignored, too large is clamped),
 * and HeldCalls' own edges: a decision taken before the listener opened
 * (read once after), a listener that cannot open (answers at once), the
 * client gone, shutdown, and the per-principal cap. The feed is an in-memory
 * stand-in for EventFeed.listen; the database paths are in
 * test/http/held-calls.test.ts and test/db/held-calls-replicas.test.ts.
 */
import { HeldCalls } from '../../src/core/held-calls';
import { fail, type NegotiateRequest, type NegotiationResult } from '../../src/core/negotiation';
import type { ApprovalStatus, LoggedEvent } from '../../src/core/ports';
import type { Principal } from '../../src/core/principal';
import { grantedWait, preferredWait } from '../../src/http/prefer';

describe('Prefer: wait', () => {
  it.each([
    ['wait=10', 10],
    ['WAIT = 10', 10],
    ['wait="7"', 7],
    ['respond-async, wait=5', 5],
    ['wait=5; foo=bar, handling=lenient', 5],
    ['wait=3, wait=9', 3],
    ['wait=0', 0],
    ['wait=99999999999999', 999_999_999],
  ])('%s → %s', (header, seconds) => {
    expect(preferredWait(header)).toBe(seconds);
  });

  it.each(['', 'wait', 'wait=', 'wait=-1', 'wait=1.5', 'wait=soon', 'return=minimal', 'waiting=5'])(
    'ignores %j',
    (header) => {
      expect(preferredWait(header)).toBeUndefined();
    },
  );

  it('reads several headers as one list, and clamps to the maximum', () => {
    expect(preferredWait(['return=minimal', 'wait=4'])).toBe(4);
    expect(grantedWait('wait=600', 300)).toBe(300);
    expect(grantedWait('wait=20', 300)).toBe(20);
    expect(grantedWait('nonsense', 300)).toBeUndefined();
  });
});

const agent: Principal = { role: 'agent', subject: 'key_1', conversationId: 'c1' };
const REQ: NegotiateRequest = { action: 'data-tool/create-resource', args: { name: 'n' } };

function refusal(id = 'apr_1'): NegotiationResult {
  return fail('permission_required', 'needs approval', {
    requiresApproval: true,
    approval: { id, status: 'pending', expiresAt: Date.now() + 60_000 },
  });
}

/** HeldCalls over an in-memory feed; `status` answers the approval's state, `ok` what a run under it gives. */
function harness(opts: { status?: ApprovalStatus; listenFails?: boolean; max?: number } = {}) {
  const listeners = new Set<(e: LoggedEvent) => void>();
  let status: ApprovalStatus = opts.status ?? 'pending';
  const runs: NegotiateRequest[] = [];
  const held = new HeldCalls({
    listen: (l) => {
      if (opts.listenFails) return Promise.reject(new Error('database away'));
      listeners.add(l);
      return Promise.resolve(() => listeners.delete(l));
    },
    status: () => Promise.resolve(status),
    maxPerPrincipal: opts.max ?? 16,
    logger: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
  });
  const run = (r: NegotiateRequest): Promise<NegotiationResult> => {
    runs.push(r);
    return Promise.resolve(r.approvalId ? { success: true } : refusal());
  };
  const decide = (s: ApprovalStatus, id = 'apr_1'): void => {
    status = s;
    for (const l of [...listeners]) {
      l({ id: 1, type: 'approval.decided', conversationId: 'c1', at: Date.now(), owner: 'u', subject: { id } });
    }
  };
  const call = (seconds: number, signal?: AbortSignal) =>
    held.negotiate({ p: agent, conversationId: 'c1', req: REQ }, { seconds, signal }, run);
  return { held, runs, listeners, decide, call };
}

const until = async (check: () => boolean): Promise<void> => {
  const deadline = Date.now() + 2000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met');
    await new Promise((r) => setImmediate(r));
  }
};

describe('HeldCalls', () => {
  it('a decision event wakes the call, which runs again under the approval; the listener then closes', async () => {
    const h = harness();
    const outcome = h.call(30);
    await until(() => h.held.size === 1 && h.listeners.size === 1);
    h.decide('approved');
    expect(await outcome).toEqual({ result: { success: true }, held: true });
    expect(h.runs.map((r) => r.approvalId)).toEqual([undefined, 'apr_1']);
    expect(h.held.size).toBe(0);
    expect(h.listeners.size).toBe(0);
  });

  it('an event for another approval wakes nothing', async () => {
    const h = harness();
    const outcome = h.call(1);
    await until(() => h.listeners.size === 1);
    h.decide('pending', 'apr_other');
    const { held, result } = await outcome;
    expect(held).toBe(true);
    expect(result.code).toBe('permission_required');
    expect(h.runs).toHaveLength(1);
  });

  it('a decision taken before the listener opened is read once, and the call runs at once', async () => {
    const h = harness({ status: 'rejected' });
    const { held } = await h.call(30);
    expect(held).toBe(true);
    expect(h.runs.map((r) => r.approvalId)).toEqual([undefined, 'apr_1']);
  });

  it('a listener that cannot open answers the refusal at once', async () => {
    const h = harness({ listenFails: true });
    const { result, held } = await h.call(30);
    expect(held).toBe(true);
    expect(result.code).toBe('permission_required');
    expect(h.held.size).toBe(0);
  });

  it('the client gone ends the hold and removes its waiter', async () => {
    const h = harness();
    const gone = new AbortController();
    const outcome = h.call(30, gone.signal);
    await until(() => h.held.size === 1);
    gone.abort();
    expect((await outcome).result.code).toBe('permission_required');
    expect(h.held.size).toBe(0);
    expect(h.listeners.size).toBe(0);
  });

  it('releaseAll answers every held call, and later calls are not held', async () => {
    const h = harness();
    const a = h.call(30);
    const b = h.call(30);
    await until(() => h.held.size === 2);
    h.held.releaseAll();
    for (const o of await Promise.all([a, b])) expect(o.result.code).toBe('permission_required');
    expect(await h.call(30)).toEqual({ result: expect.objectContaining({ code: 'permission_required' }), held: false });
  });

  it('beyond the per-principal cap a call is not held; a slot freed is taken again', async () => {
    const h = harness({ max: 1 });
    const first = h.call(30);
    await until(() => h.held.size === 1);
    expect((await h.call(30)).held).toBe(false);
    h.decide('approved');
    expect((await first).held).toBe(true);
    h.decide('pending');
    const again = h.call(1);
    await until(() => h.held.size === 1);
    expect((await again).held).toBe(true);
  });

  it('holds nothing for a wait of 0, a dry run or an answer other than a pending approval', async () => {
    const h = harness();
    expect((await h.call(0)).held).toBe(false);
    const dry = await h.held.negotiate(
      { p: agent, conversationId: 'c1', req: { ...REQ, dryRun: true } },
      { seconds: 30 },
      () => Promise.resolve(refusal()),
    );
    expect(dry.held).toBe(false);
    const denied = await h.held.negotiate({ p: agent, conversationId: 'c1', req: REQ }, { seconds: 30 }, () =>
      Promise.resolve(fail('denied', 'no')),
    );
    expect(denied.held).toBe(false);
  });
});
