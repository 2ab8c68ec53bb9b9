/**
 * The conversation manager (seed 002, `negotiate`): routes an action to a
 * tool, decides alignment and permission in the conversation, validates the
 * args, and runs the action with a shared context bound to the conversation
 * and the tool. A write-level action runs in one transaction: its writes
 * commit together or not at all.
 */
import type { Pool, PoolClient } from 'pg';
import { isDatabaseUnavailable } from '../db/database';
import type { PrismaClient } from '../generated/prisma/client';
import { loadDecisionContext, ensureConversation } from './conversations';
import { LEVEL_NAMES, effectiveLevel, isLevel, setToolLevel } from './permissions';
import { deniedBy } from './policy';
import { SqlSharedContext, type Queryable } from './shared-context';
import type { CatalogSnapshot, RoutedAction, ToolCatalog, ToolView } from './tool-catalog';
import { baseAlignment } from './tool-catalog';
import type { LoadedAction } from './tool-module';
import { ToolError, type Alignment, type Level, type Resource, type ToolLogger } from './tool-interface';

export interface NegotiateRequest {
  action: string;
  args?: Record<string, unknown>;
  tool?: string;
  dryRun?: boolean;
}

export interface Routing {
  tool: string;
  action: string;
  /** 1.0 for an exact match; approximate matches are lower. */
  confidence: number;
  /** true when the tool was named (qualified action or `tool`). */
  explicit: boolean;
}

export interface NegotiationResult {
  success: boolean;
  /** The action's output; on `no_tool` `{suggestions}`, on `ambiguous_action` `{candidates}`. */
  output?: unknown;
  /** Human-readable, safe to show. */
  error?: string;
  /**
   * Machine-readable: invalid_args, no_tool, unknown_tool, ambiguous_action,
   * permission_required, denied, resource_not_found, resource_exists,
   * resource_too_large, tool_error.
   */
  code?: string;
  requiresApproval?: boolean;
  approvalReason?: string;
  alignment?: Alignment;
  routing?: Routing;
}

export interface NegotiationOutcome {
  status: number;
  result: NegotiationResult;
}

export interface ConversationManagerDeps {
  pool: Pool;
  prisma: PrismaClient;
  catalog: ToolCatalog;
  logger: ToolLogger;
  resourceMaxBytes: number;
  exportDir: string;
  /** A tool call still running after this is answered with tool_error and its writes rolled back. */
  toolTimeoutMs: number;
}

const UPGRADE_RE = /^upgrade:([^:]*):level-(.*)$/;

const TOOL_ERROR_STATUS: Record<ToolError['code'], number> = {
  invalid_args: 400,
  resource_not_found: 404,
  resource_exists: 409,
  resource_too_large: 413,
};

function fail(status: number, code: string, error: string, extra: Partial<NegotiationResult> = {}): NegotiationOutcome {
  return { status, result: { success: false, error, code, ...extra } };
}

export class ConversationManager {
  constructor(private readonly deps: ConversationManagerDeps) {}

  async negotiate(conversationId: string, req: NegotiateRequest): Promise<NegotiationOutcome> {
    const snapshot = this.deps.catalog.snapshot();
    if (req.action === 'list-tools') return this.listTools(conversationId, req);
    const upgrade = UPGRADE_RE.exec(req.action);
    if (upgrade) return this.upgrade(conversationId, snapshot, upgrade[1]!, upgrade[2]!, req);
    return this.routeAndRun(conversationId, snapshot, req);
  }

  private async listTools(conversationId: string, req: NegotiateRequest): Promise<NegotiationOutcome> {
    if (!req.dryRun) await ensureConversation(this.deps.pool, conversationId);
    const tools: ToolView[] = this.deps.catalog.toolViews();
    return {
      status: 200,
      result: { success: true, ...(req.dryRun ? {} : { output: { tools } }), alignment: 'aligned' },
    };
  }

  private async upgrade(
    conversationId: string,
    snapshot: CatalogSnapshot,
    tool: string,
    levelText: string,
    req: NegotiateRequest,
  ): Promise<NegotiationOutcome> {
    const level = /^[0-9]$/.test(levelText) ? Number(levelText) : NaN;
    if (!isLevel(level)) {
      return fail(
        400,
        'invalid_args',
        `Invalid level "${levelText.slice(0, 32)}": use upgrade:TOOL:level-N with N = 1, 2 or 3`,
      );
    }
    if (!snapshot.set.byName.has(tool)) return fail(404, 'unknown_tool', `Unknown tool: ${tool.slice(0, 64)}`);
    if (req.dryRun) return { status: 200, result: { success: true, alignment: 'aligned' } };
    const change = await setToolLevel(this.deps.prisma, conversationId, tool, level, 'negotiate');
    return { status: 200, result: { success: true, output: change, alignment: 'aligned' } };
  }

  private async routeAndRun(
    conversationId: string,
    snapshot: CatalogSnapshot,
    req: NegotiateRequest,
  ): Promise<NegotiationOutcome> {
    const route = snapshot.router.route(req.action, req.tool);
    switch (route.kind) {
      case 'no_tool':
        return fail(404, 'no_tool', `No tool found for action: ${req.action.slice(0, 128)}`, {
          output: { suggestions: route.suggestions },
        });
      case 'unknown_tool':
        return fail(404, 'unknown_tool', route.message);
      case 'ambiguous':
        return fail(
          409,
          'ambiguous_action',
          `Several tools offer ${req.action.slice(0, 128)}: name one (${route.candidates.join(', ')})`,
          {
            output: { candidates: route.candidates },
          },
        );
      case 'ok':
        return this.decideAndRun(
          conversationId,
          route.entry,
          { confidence: route.confidence, explicit: route.explicit },
          req,
        );
    }
  }

  private async decideAndRun(
    conversationId: string,
    entry: RoutedAction,
    how: { confidence: number; explicit: boolean },
    req: NegotiateRequest,
  ): Promise<NegotiationOutcome> {
    const action = entry.loaded;
    const routing: Routing = {
      tool: action.tool,
      action: action.name,
      confidence: how.confidence,
      explicit: how.explicit,
    };
    // Args are parsed first only to learn a read action's declared resource;
    // their errors are reported after the permission decision, as before.
    const parsed = action.parseArgs(req.args ?? {});
    const prefetch = parsed.ok && !req.dryRun ? action.prefetch?.(parsed.value) : undefined;
    const ctx = await loadDecisionContext(
      this.deps.pool,
      conversationId,
      action.tool,
      !req.dryRun,
      prefetch,
      this.deps.logger,
    );

    const deny = deniedBy(ctx.policy, action.qualifiedName);
    if (deny) {
      return fail(403, 'denied', `Action ${action.qualifiedName} is denied by this conversation's policy (${deny})`, {
        alignment: 'contradiction',
        routing,
      });
    }
    const alignment = baseAlignment(action.level);
    const current = effectiveLevel(ctx.explicitLevel, ctx.legacyLevel).level;
    if (current < action.level) {
      return fail(403, 'permission_required', `Permission upgrade required for ${action.qualifiedName}`, {
        requiresApproval: true,
        approvalReason: approvalReason(action.tool, action.name, action.level, current),
        alignment,
        routing,
      });
    }
    if (!parsed.ok) {
      return fail(400, 'invalid_args', `Invalid args for ${action.qualifiedName}: ${parsed.path}: ${parsed.message}`, {
        alignment,
        routing,
      });
    }
    if (req.dryRun) {
      const problem = action.checkArgs
        ? await this.checkInSandbox(action, parsed.value, { alignment, routing })
        : undefined;
      return problem ?? { status: 200, result: { success: true, alignment, routing } };
    }
    return this.run(conversationId, entry, parsed.value, { alignment, routing }, ctx.prefetched);
  }

  /** A dry run of an isolated action: its args checked by the tool's own schema, in its worker. */
  private async checkInSandbox(
    action: LoadedAction,
    args: Record<string, unknown>,
    decided: { alignment: Alignment; routing: Routing },
  ): Promise<NegotiationOutcome | undefined> {
    const stop = new AbortController();
    const checking = action.checkArgs!(args, stop.signal);
    checking.catch(() => undefined);
    try {
      const checked = await withTimeout(checking, this.deps.toolTimeoutMs);
      if (checked === TIMED_OUT) {
        stop.abort();
        const message = `Tool ${action.tool} did not check the args of ${action.name} within ${this.deps.toolTimeoutMs} ms`;
        return fail(500, 'tool_error', message, decided);
      }
      if (checked.ok) return undefined;
      return fail(
        400,
        'invalid_args',
        `Invalid args for ${action.qualifiedName}: ${checked.path}: ${checked.message}`,
        decided,
      );
    } catch (err) {
      this.deps.logger.error({ err, tool: action.tool, action: action.name }, 'tool failed checking args');
      return fail(500, 'tool_error', `Tool ${action.tool} failed while checking the args of ${action.name}`, decided);
    }
  }

  private async run(
    conversationId: string,
    entry: RoutedAction,
    args: Record<string, unknown>,
    decided: { alignment: Alignment; routing: Routing },
    prefetched?: { name: string; resource: Resource | null },
    attempt = 1,
  ): Promise<NegotiationOutcome> {
    const action = entry.loaded;
    const tx = new LazyTransaction(this.deps.pool);
    const readOnly = action.level === 1;
    const sharedContext = new SqlSharedContext({
      conversationId,
      toolName: action.tool,
      maxBytes: this.deps.resourceMaxBytes,
      db: readOnly ? () => Promise.resolve(this.deps.pool) : () => tx.client(),
      readOnly,
      prefetched,
    });
    // Aborted on timeout: an isolated (TOOLS_DIR) action's worker is then terminated.
    const stop = new AbortController();
    const running = action.run(
      args,
      {
        conversationId,
        toolName: action.tool,
        action: action.name,
        args,
        sharedContext,
        logger: this.deps.logger,
        exportDir: this.deps.exportDir,
      },
      stop.signal,
    );
    // A handler still running after a timeout may reject later: nobody awaits it then.
    running.catch(() => undefined);
    try {
      const output = await withTimeout(running, this.deps.toolTimeoutMs);
      if (output === TIMED_OUT) {
        stop.abort();
        await tx.abandon();
        this.deps.logger.error(
          { tool: action.tool, action: action.name, conversationId, timeoutMs: this.deps.toolTimeoutMs },
          'tool timed out',
        );
        return fail(
          500,
          'tool_error',
          `Tool ${action.tool} did not finish ${action.name} within ${this.deps.toolTimeoutMs} ms`,
          decided,
        );
      }
      // A handler that swallowed a deadlock error returns over an aborted transaction: nothing would commit.
      if (sharedContext.conflicted) throw new Error('transaction aborted by a deadlock or serialization failure');
      await tx.commit();
      return { status: 200, result: { success: true, output: output ?? null, ...decided } };
    } catch (err) {
      await tx.rollback();
      // Postgres broke a deadlock (or a serialization conflict) by aborting this action's transaction:
      // nothing of it committed, so the whole action runs again, on a fresh transaction.
      if (sharedContext.conflicted && attempt < MAX_ACTION_ATTEMPTS) {
        return this.run(conversationId, entry, args, decided, prefetched, attempt + 1);
      }
      if (err instanceof ToolError) return fail(TOOL_ERROR_STATUS[err.code], err.code, err.message, decided);
      // Database trouble is the service's, not the tool's: a 503, not a tool_error.
      if (isDatabaseUnavailable(err)) throw err;
      this.deps.logger.error({ err, tool: action.tool, action: action.name, conversationId }, 'tool threw');
      return fail(500, 'tool_error', `Tool ${action.tool} failed while running ${action.name}`, decided);
    }
  }
}

const TIMED_OUT = Symbol('timed out');

/** Runs of one write action when Postgres aborts it for a deadlock or serialization failure (40P01, 40001). */
const MAX_ACTION_ATTEMPTS = 3;

/** The promise's value, or TIMED_OUT when it takes longer than `ms`. */
async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
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

export function approvalReason(tool: string, action: string, required: Level, current: Level): string {
  return (
    `Permission upgrade required: ${tool} needs level ${required} (${LEVEL_NAMES[required]}) for ${action}, ` +
    `but its current level in this conversation is ${current} (${LEVEL_NAMES[current]}). ` +
    `The conversation owner can approve with upgrade:${tool}:level-${required}.`
  );
}

/**
 * A transaction begun on the first statement that needs it, so actions that
 * write nothing cost no BEGIN/COMMIT round trips.
 */
class LazyTransaction {
  private pending: Promise<PoolClient> | undefined;
  /** Set once the action is over: a handler still running cannot start a new transaction. */
  private finished = false;

  constructor(private readonly pool: Pool) {}

  client(): Promise<Queryable> {
    if (this.finished) return Promise.reject(new Error('The action is over; its transaction is closed'));
    this.pending ??= (async () => {
      const c = await this.pool.connect();
      try {
        await c.query('BEGIN');
      } catch (err) {
        c.release(err as Error);
        throw err;
      }
      return c;
    })();
    return this.pending;
  }

  async commit(): Promise<void> {
    this.finished = true;
    if (!this.pending) return;
    const c = await this.pending;
    this.pending = undefined;
    try {
      await c.query('COMMIT');
      c.release();
    } catch (err) {
      c.release(err as Error);
      throw err;
    }
  }

  async rollback(): Promise<void> {
    this.finished = true;
    if (!this.pending) return;
    const pending = this.pending;
    this.pending = undefined;
    let c: PoolClient;
    try {
      c = await pending;
    } catch {
      return; // BEGIN never happened.
    }
    try {
      await c.query('ROLLBACK');
      c.release();
    } catch (err) {
      // A broken connection is discarded rather than returned to the pool.
      c.release(err as Error);
    }
  }

  /**
   * After a timeout the handler may still hold the connection and send more:
   * the connection is destroyed rather than returned to the pool, which also
   * makes Postgres roll the transaction back.
   */
  async abandon(): Promise<void> {
    this.finished = true;
    const pending = this.pending;
    this.pending = undefined;
    if (!pending) return;
    try {
      (await pending).release(new Error('abandoned after the tool timed out'));
    } catch {
      // BEGIN never happened.
    }
  }
}
