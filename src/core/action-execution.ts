/**
 * Running one decided action: a write-level action inside one unit of work
 * (its writes commit together or not at all), a read-level one on a context
 * that refuses writes; the tool-timeout; the retry after a deadlock. Also the
 * dry run's argument check inside an isolated tool's worker.
 */
import type { NegotiationTrail } from './audit';
import { AppError, findCause, isUnavailable } from './errors';
import type { OutcomeKeeper } from './idempotency';
import { fail, type NegotiationResult, type Routing } from './negotiation';
import type { Transaction, UnitOfWork, UnitsOfWork } from './ports';
import type { ResourceService } from './resource-service';
import { saveIn, savedData } from './save-as';
import { ConversationSharedContext } from './shared-context';
import { productCheck } from './tool-dependencies';
import type { LoadedAction } from './tool-module';
import { ToolError, type Alignment, type Resource, type ToolContext, type ToolLogger } from './tool-interface';

/** The context an action runs with: its conversation, its name, its args and the shared context given. */
export function toolContextOf(
  deps: Pick<ExecutionDeps, 'logger' | 'exportDir'>,
  call: { conversationId: string; action: Pick<LoadedAction, 'tool' | 'name'>; args: Record<string, unknown> },
  sharedContext: ConversationSharedContext,
): ToolContext {
  const { conversationId, action, args } = call;
  return {
    conversationId,
    toolName: action.tool,
    action: action.name,
    args,
    sharedContext,
    logger: deps.logger,
    exportDir: deps.exportDir,
  };
}

export interface ExecutionDeps {
  resources: ResourceService;
  units: UnitsOfWork;
  logger: ToolLogger;
  exportDir: string;
  /** A tool call still running after this is answered with tool_error and its writes rolled back. */
  toolTimeoutMs: number;
  /**
   * For one call only: a statement made first in the action's transaction
   * (consuming a `once` approval, src/core/approvals.ts), so a failing action
   * rolls it back; a result refuses the call, nothing run.
   */
  claim?: (tx: Transaction) => Promise<NegotiationResult | undefined>;
  /** With `claim`: gives the claimed approval back (a participant's call that never reached its upstream). */
  release?: () => Promise<void>;
}

export interface Decided {
  alignment: Alignment;
  routing: Routing;
}

export const TIMED_OUT = Symbol('timed out');

/**
 * After a timeout, how long a singleWrite action whose write committed anyway
 * (it ended as it was cancelled) is given to return: its write was its last step.
 */
const SINGLE_WRITE_GRACE_MS = 1000;

/** Runs of one write action when the database aborts it for a deadlock or serialization failure. */
const MAX_ACTION_ATTEMPTS = 3;

/** The promise's value, or TIMED_OUT when it takes longer than `ms`. */
export async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** An AppError along the cause chain: a tool may wrap the error its shared context threw. */
function appErrorIn(err: unknown): AppError | undefined {
  return findCause(err, (e): e is AppError => e instanceof AppError);
}

/** One decided call to run: what travels together from negotiate's decision to the handler. */
export interface ActionCall {
  conversationId: string;
  action: LoadedAction;
  args: Record<string, unknown>;
  decided: Decided;
  prefetched?: { name: string; resource: Resource | null };
  /** With an Idempotency-Key: the unit begins (and claims the key) before the handler, and keeps the outcome. */
  keeper?: OutcomeKeeper;
  trail?: NegotiationTrail;
  /** negotiate's saveAs: the output is written under this name in the call's unit of work (src/core/save-as.ts). */
  saveAs?: string;
  /** The conversation owner's subject: a participant's action gets it (RunCall), a bundled one never needs it. */
  owner?: string;
}

export async function runAction(deps: ExecutionDeps, call: ActionCall, attempt = 1): Promise<NegotiationResult> {
  const { conversationId, action, decided, prefetched, keeper, trail } = call;
  const unit = await openUnit(deps, call);
  // A unit not yet begun carries the call's success entry in its BEGIN (a keyed call's began in open()).
  if (unit && trail) trail.ahead(unit, decided);
  if (deps.claim) {
    // A read-level action without a key has no unit: its claim commits on its own (it has no writes to go with).
    const claimUnit = unit ?? deps.units.start();
    const refused = await claimIn(deps.claim, claimUnit);
    if (refused) return { ...refused, ...decided };
    if (!unit) await claimUnit.commit();
  }
  const produces = action.produces ? productCheck(action, call.args) : undefined;
  const sharedContext = new ConversationSharedContext({
    conversationId,
    toolName: action.tool,
    resources: deps.resources,
    unit: action.level === 1 ? undefined : unit,
    readUnit: action.level === 1 ? unit : undefined,
    prefetched,
    produces,
  });
  // Aborted on timeout: an isolated (TOOLS_DIR) action's worker is then terminated. Only isolated
  // actions (those with checkArgs) can be stopped, so only they get one: in-process ones run per request.
  const stop = action.checkArgs ? new AbortController() : undefined;
  const running = startHandler(deps, call, sharedContext, stop);
  try {
    const output = await withTimeout(running, deps.toolTimeoutMs);
    if (output === TIMED_OUT) return await answerTimeout(deps, call, { unit, running, stop });
    // A handler that swallowed a deadlock error returns over an aborted transaction: nothing would commit.
    if (sharedContext.conflicted) throw new Error('transaction aborted by a deadlock or serialization failure');
    // A transaction that failed after writing part of itself (caught by the tool): none of it may commit.
    if (sharedContext.batchFailure) throw sharedContext.batchFailure;
    if (call.saveAs !== undefined && unit) {
      const saved = savedData(action, output ?? null);
      // A saved result is a write of the action's too: its produces schema applies.
      produces?.(call.saveAs, saved);
      const json = deps.resources.encode(saved);
      await saveIn(deps.resources, unit, { conversationId, name: call.saveAs, by: action.tool }, json);
    }
    const result: NegotiationResult = { success: true, output: output ?? null, ...decided };
    // The kept outcome and the audit entry commit with the action's writes, or none does.
    if (keeper && unit) await keeper.keep(unit, result);
    if (unit && trail) await trail.inUnit(unit, result);
    await unit?.commit();
    return result;
  } catch (err) {
    await unit?.rollback();
    trail?.rolledBack();
    // The database broke a deadlock (or a serialization conflict) by aborting this action's transaction:
    // nothing of it committed, so the whole action runs again, in a fresh unit of work.
    if (sharedContext.conflicted && attempt < MAX_ACTION_ATTEMPTS) {
      return runAction(deps, call, attempt + 1);
    }
    return answerFailure(deps, call, err);
  }
}

/** The call's unit of work, or none for a read-level action without a key (or a saveAs). */
async function openUnit(deps: ExecutionDeps, call: ActionCall): Promise<UnitOfWork | undefined> {
  const { action, keeper, saveAs } = call;
  // Only a write-level action gets a unit of work: a read-level context without one refuses writes.
  // With a key the unit begins before the handler (the key's claim is in it), whatever the level; with
  // saveAs the output is written in it (a read-level action's context still refuses writes).
  return keeper
    ? await keeper.open()
    : action.level === 1 && saveAs === undefined
      ? undefined
      : // A declared single write commits on its own, with the call's entry; a `once` claim or a saveAs
        // needs a transaction.
        action.singleWrite && !deps.claim && saveAs === undefined
        ? deps.units.startSingle()
        : deps.units.start();
}

/** The handler started on the call's shared context (not awaited). */
function startHandler(
  deps: ExecutionDeps,
  call: ActionCall,
  sharedContext: ConversationSharedContext,
  stop: AbortController | undefined,
): Promise<unknown> {
  const running = call.action.run(call.args, toolContextOf(deps, call, sharedContext), stop?.signal);
  // A handler still running after a timeout may reject later: nobody awaits it then.
  running.catch(() => undefined);
  return running;
}

/** A handler past the tool-timeout: stopped and its writes rolled back, unless a single write already committed. */
async function answerTimeout(
  deps: ExecutionDeps,
  call: ActionCall,
  run: { unit: UnitOfWork | undefined; running: Promise<unknown>; stop: AbortController | undefined },
): Promise<NegotiationResult> {
  const { conversationId, action, decided, trail } = call;
  const { unit, running, stop } = run;
  stop?.abort();
  await unit?.abandon();
  // A single write that committed before it could be cancelled stands: the call is answered as it ended.
  if (action.singleWrite && unit?.begun()) {
    const late = await withTimeout(running, SINGLE_WRITE_GRACE_MS).catch(() => TIMED_OUT);
    if (late !== TIMED_OUT) {
      const result: NegotiationResult = { success: true, output: late ?? null, ...decided };
      if (trail) await trail.inUnit(unit, result);
      return result;
    }
  }
  deps.logger.error(
    { tool: action.tool, action: action.name, conversationId, timeoutMs: deps.toolTimeoutMs },
    'tool timed out',
  );
  const message = `Tool ${action.tool} did not finish ${action.name} within ${deps.toolTimeoutMs} ms`;
  return fail('tool_error', message, decided);
}

/** What a handler's error (its unit rolled back, not retried) answers, or rethrows for the transport. */
function answerFailure(deps: ExecutionDeps, call: ActionCall, err: unknown): NegotiationResult {
  const { conversationId, action, decided } = call;
  if (err instanceof ToolError) return fail(err.code, err.message, decided);
  // Database trouble is the service's, not the tool's: the transport answers it (a 503), not a tool_error.
  if (isUnavailable(err)) throw err;
  // So is a database error src/db translated into the domain's (the conversation deleted while the
  // action ran, say): the transport answers it as it does on REST (a 404 not_found problem).
  const domainError = appErrorIn(err);
  if (domainError) throw domainError;
  deps.logger.error({ err, tool: action.tool, action: action.name, conversationId }, 'tool threw');
  return fail('tool_error', `Tool ${action.tool} failed while running ${action.name}`, decided);
}

/** Runs the claim in `unit`'s transaction; on a refusal or an error the unit is rolled back. */
async function claimIn(
  claim: NonNullable<ExecutionDeps['claim']>,
  unit: ReturnType<UnitsOfWork['start']>,
): Promise<NegotiationResult | undefined> {
  try {
    const refused = await claim(await unit.transaction());
    if (refused) await unit.rollback();
    return refused;
  } catch (err) {
    await unit.rollback();
    throw err;
  }
}

/** A dry run of an isolated action: its args checked by the tool's own schema, in its worker. */
export async function checkInSandbox(
  deps: Pick<ExecutionDeps, 'logger' | 'toolTimeoutMs'>,
  action: LoadedAction,
  args: Record<string, unknown>,
  decided: Decided,
): Promise<NegotiationResult | undefined> {
  const stop = new AbortController();
  const checking = action.checkArgs!(args, stop.signal);
  checking.catch(() => undefined);
  try {
    const checked = await withTimeout(checking, deps.toolTimeoutMs);
    if (checked === TIMED_OUT) {
      stop.abort();
      const message = `Tool ${action.tool} did not check the args of ${action.name} within ${deps.toolTimeoutMs} ms`;
      return fail('tool_error', message, decided);
    }
    if (checked.ok) return undefined;
    return fail(
      'invalid_args',
      `Invalid args for ${action.qualifiedName}: ${checked.path}: ${checked.message}`,
      decided,
    );
  } catch (err) {
    deps.logger.error({ err, tool: action.tool, action: action.name }, 'tool failed checking args');
    return fail('tool_error', `Tool ${action.tool} failed while checking the args of ${action.name}`, decided);
  }
}
