/**
 * Running a participant's action (a remote tool, API.md "Participants"),
 * once negotiate decided it exactly as it decides any other
 * (conversation-manager.ts). No transaction is held while the upstream runs:
 * 1. an Idempotency-Key, then a `once` approval, are claimed, each by one
 *    statement committed on its own, so racing calls reach the upstream once;
 * 2. the upstream is called (the action's run: its transport's adapter), with
 *    the conversation owner's subject (per-owner credentials), within its
 *    timeout;
 * 3. what the call leaves here is written: a read's audit entry is queued as
 *    any read's; a write's is committed at once; with `saveAs` or a key, the
 *    entry, the resource and the kept outcome go in one statement (saveAs) or
 *    one short transaction (a key).
 * An upstream that was never reached (ParticipantUnavailableError, anywhere
 * along the cause chain) is participant_unavailable: the approval and the key
 * are given back and nothing is written but the refusal's entry. Everything
 * the upstream answered, failure included, is final: it cannot be rolled back.
 */
import { type ActionCall, type ExecutionDeps, TIMED_OUT, toolContextOf, withTimeout } from './action-execution';
import { findCause, isUnavailable } from './errors';
import { fail, type NegotiationResult } from './negotiation';
import type { NegotiationObserver, UnitOfWork, UnitsOfWork } from './ports';
import { saveIn, savedData } from './save-as';
import { ConversationSharedContext } from './shared-context';
import { ToolError } from './tool-interface';
import { ParticipantCallError, ParticipantUnavailableError } from './remote-action';

export interface RemoteExecutionDeps extends ExecutionDeps {
  /** Told of each upstream call inside the negotiation's span (server.address, mcp.method.name). */
  observer?: NegotiationObserver;
}

/** How long past a participant's own timeout its adapter is given to cancel the call and answer. */
const ADAPTER_GRACE_MS = 1000;

type Upstream = { output: unknown } | { failed: NegotiationResult } | { unreached: NegotiationResult };

export async function runRemote(deps: RemoteExecutionDeps, call: ActionCall): Promise<NegotiationResult> {
  const { keeper, decided } = call;
  await keeper?.claimAhead();
  if (deps.claim) {
    let refused: NegotiationResult | undefined;
    try {
      refused = await claimAlone(deps.units, deps.claim);
    } catch (err) {
      await keeper?.release();
      throw err;
    }
    if (refused) {
      await keeper?.release();
      return { ...refused, ...decided };
    }
  }
  const upstream = await callUpstream(deps, call);
  if ('unreached' in upstream) {
    // Never reached: given back, so that a retry once the upstream is back runs (once).
    await deps.release?.();
    await keeper?.release();
    return upstream.unreached;
  }
  return finish(deps, call, upstream);
}

/** A `once` approval's claim, one statement committed on its own. */
async function claimAlone(
  units: UnitsOfWork,
  claim: NonNullable<ExecutionDeps['claim']>,
): Promise<NegotiationResult | undefined> {
  const unit = units.startSingle();
  try {
    return await claim(await unit.transaction());
  } finally {
    await unit.commit();
  }
}

async function callUpstream(deps: RemoteExecutionDeps, call: ActionCall): Promise<Upstream> {
  const { conversationId, action, args, decided, owner } = call;
  const remote = action.remote!;
  const participant = remote.participant;
  deps.observer?.upstream?.(remote);
  const stop = new AbortController();
  // A participant never reads or writes the shared context itself: its context refuses writes.
  const sharedContext = new ConversationSharedContext({
    conversationId,
    toolName: action.tool,
    resources: deps.resources,
  });
  const running = action.run(
    args,
    toolContextOf(deps, call, sharedContext),
    stop.signal,
    owner === undefined ? {} : { conversationOwner: owner },
  );
  running.catch(() => undefined);
  // The adapter's own timeout (the participant's) answers first, with its message; this one is the backstop.
  const timeoutMs = remote.timeoutMs === undefined ? deps.toolTimeoutMs : remote.timeoutMs + ADAPTER_GRACE_MS;
  try {
    const output = await withTimeout(running, timeoutMs);
    if (output !== TIMED_OUT) return { output: output ?? null };
    // The adapter cancels the upstream request on abort.
    stop.abort();
    deps.logger.error({ participant, action: action.name, conversationId, timeoutMs }, 'participant call timed out');
    return {
      failed: fail(
        'tool_error',
        `Participant ${participant} did not answer ${action.name} within ${timeoutMs} ms`,
        decided,
      ),
    };
  } catch (err) {
    const down = findCause(err, (e): e is ParticipantUnavailableError => e instanceof ParticipantUnavailableError);
    if (down) {
      const retryAfterSeconds = Math.max(1, Math.ceil(down.retryAfterSeconds));
      const message = `Participant ${participant} is unavailable; retry after ${retryAfterSeconds} s`;
      return { unreached: fail('participant_unavailable', message, { retryAfterSeconds, ...decided }) };
    }
    // An upstream error result or timeout: its message is safe by the adapter's contract.
    if (err instanceof ParticipantCallError) return { failed: fail('tool_error', err.message, decided) };
    if (err instanceof ToolError) return { failed: fail(err.code, err.message, decided) };
    if (isUnavailable(err)) throw err;
    deps.logger.error({ err, participant, action: action.name, conversationId }, 'participant call failed');
    return { failed: fail('tool_error', `Participant ${participant} failed while running ${action.name}`, decided) };
  }
}

/** The upstream answered: what the call leaves here, written without holding anything across the upstream call. */
async function finish(
  deps: RemoteExecutionDeps,
  call: ActionCall,
  upstream: { output: unknown } | { failed: NegotiationResult },
): Promise<NegotiationResult> {
  const { conversationId, action, decided, keeper, trail, saveAs } = call;
  let answer: NegotiationResult =
    'failed' in upstream ? upstream.failed : { success: true, output: upstream.output, ...decided };
  let json: string | undefined;
  if (answer.success && saveAs !== undefined) {
    try {
      json = deps.resources.encode(savedData(action, answer.output));
    } catch (err) {
      // A result the shared context refuses (too large): that refusal is the answer, nothing saved.
      if (!(err instanceof ToolError)) throw err;
      answer = fail(err.code, `The result was not saved as ${saveAs}: ${err.message}`, decided);
    }
  }
  if (!keeper && json === undefined) {
    // A read's entry is queued as any read's (negotiate's trail); a write's is committed now: the upstream
    // changed something, and its entry must not be lost as a queued one may be.
    if (action.level > 1 || saveAs !== undefined) await trail?.now(answer);
    return answer;
  }
  // saveAs without a key: one statement (the resource, its entry inserted by the same statement).
  const unit: UnitOfWork = keeper ? deps.units.start() : deps.units.startSingle();
  if (trail && json !== undefined) trail.ahead(unit, decided);
  try {
    if (json !== undefined)
      await saveIn(deps.resources, unit, { conversationId, name: saveAs!, by: action.tool }, json);
    if (keeper) await keeper.keep(unit, answer);
    if (trail) await trail.inUnit(unit, answer);
    await unit.commit();
    return answer;
  } catch (err) {
    await unit.rollback();
    trail?.rolledBack();
    throw err;
  }
}
