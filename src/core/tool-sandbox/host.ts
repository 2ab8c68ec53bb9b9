/**
 * The host side of one TOOLS_DIR module's sandbox: a worker thread that has
 * loaded the module, the calls in flight on it, and the shared-context calls
 * those make, served here against the action's own SharedContext (so a
 * write-level action's writes stay in its one transaction, and a read-level
 * one's context still refuses writes).
 *
 * One worker per module serves every call of its tools, concurrently, as the
 * module would in-process. A call whose caller gives up (TOOL_TIMEOUT_MS)
 * terminates the worker, which is the only way to stop `while (true) {}`;
 * other calls in flight on that worker fail with it, and the next call starts
 * a fresh worker that loads the module again.
 */
import { extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import {
  ToolError,
  isToolErrorCode,
  type ResourceQuery,
  type SharedContext,
  type TransactionOperation,
  type ToolContext,
  type ToolLogger,
  type WriteOptions,
} from '../tool-interface';
import { SkipModule, errorMessage, type ParseArgsResult } from '../tool-module';
import {
  LOG_LEVELS,
  type CtxMethod,
  type HostMessage,
  type RunRequest,
  type ToolMeta,
  type WireError,
  type WorkerInit,
  type WorkerMessage,
} from './protocol';

type Done = Extract<WorkerMessage, { type: 'done' }>;

/** How long a worker may take to start (load tsx or the compiled worker) before it reports `loading`. */
const WORKER_BOOT_TIMEOUT_MS = 60_000;

/** A worker's answer, with the last non-ToolError the call's context calls failed with (its likely cause). */
interface Outcome {
  done: Done;
  contextError?: unknown;
}

interface Pending {
  worker: Worker;
  qualifiedName: string;
  /** Absent for an args check, which runs no handler. */
  ctx?: ToolContext;
  resolve(outcome: Outcome): void;
  reject(err: Error): void;
  /** The last non-ToolError a context call failed with: the real cause when the handler rethrows it. */
  contextError?: unknown;
}

/**
 * From `src/` (jest, tsx) the worker entry is TypeScript and the worker thread
 * does not inherit the parent's loader, so it registers tsx itself; that also
 * lets `.ts` tool modules load. From `dist/` it is plain JavaScript.
 */
function startWorker(file: string): Worker {
  const entry = join(__dirname, `worker${extname(__filename)}`);
  const workerData: WorkerInit = { file };
  // An empty process.env: the service's (DATABASE_URL, tokens) is not the tool's to read. Neither the
  // worker nor tsx needs a variable from it; Node's own options are the process's, not the env's.
  const env = {};
  if (extname(entry) !== '.ts') return new Worker(entry, { workerData, env });
  const tsx = require.resolve('tsx/cjs/api');
  const code = `require(${JSON.stringify(tsx)}).register(); require(${JSON.stringify(entry)});`;
  return new Worker(code, { eval: true, workerData, env });
}

/** The one shared-context method the worker asked for; the context itself checks names, sizes and levels. */
function invoke(shared: SharedContext, method: CtxMethod, args: unknown[]): Promise<unknown> {
  // The options are passed on as the tool sent them: the shared context checks them (ttlSecondsOf).
  const [name, data, options] = args;
  switch (method) {
    case 'createResource':
      return shared.createResource(name as string, data, options as WriteOptions | undefined);
    case 'getResource':
      return shared.getResource(name as string);
    case 'updateResource':
      return shared.updateResource(name as string, data, options as WriteOptions | undefined);
    case 'listResources':
      return shared.listResources(name as { prefix?: string } | undefined);
    case 'deleteResource':
      return shared.deleteResource(name as string);
    case 'queryResources':
      // Whatever the worker sent: the shared context checks every field of the query.
      return shared.queryResources(name as ResourceQuery);
    case 'transaction':
      // The operations as the worker sent them: the context checks them (checkOperations).
      return shared.transaction(name as TransactionOperation[]);
    default:
      return Promise.reject(new Error(`No shared-context method ${String(method)}`));
  }
}

/** An index a worker sent: a tool may send anything, only a position is kept. */
function wireIndex(index: unknown): number | undefined {
  return Number.isSafeInteger(index) && (index as number) >= 0 ? (index as number) : undefined;
}

/** A ToolError as it crosses to the worker (or back): its code, message and operation index. */
function toolErrorWire(err: ToolError): WireError {
  return { code: err.code, message: err.message, ...(err.index !== undefined ? { index: err.index } : {}) };
}

/** A worker's error: a ToolError only with one of ToolError's codes (a tool may send any string), else a tool_error. */
function fromWire(err: WireError | undefined): Error {
  if (isToolErrorCode(err?.code)) return new ToolError(err.code, err.message, wireIndex(err.index));
  const failure = new Error(err?.message ?? 'the tool failed');
  // The tool's own stack is what its author needs in the log; the host's would only show this file.
  if (err?.stack) failure.stack = err.stack;
  return failure;
}

export class ToolHost {
  private worker: Worker | undefined;
  private ready: Promise<ToolMeta> | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** Calls between their start and their end, including those still waiting for a worker to load. */
  private active = 0;
  private retired = false;

  constructor(
    readonly file: string,
    private readonly loadTimeoutMs: number,
    private readonly logger: ToolLogger,
  ) {}

  /** Starts the worker and returns the module's tool; throws SkipModule with the reason it cannot load. */
  load(): Promise<ToolMeta> {
    this.ready ??= this.spawn();
    return this.ready;
  }

  /** Runs one action in the worker; `stop` aborted means the caller gave up: the worker is terminated. */
  async call(
    qualifiedName: string,
    action: string,
    args: Record<string, unknown>,
    ctx: ToolContext,
    stop?: AbortSignal,
  ): Promise<unknown> {
    const { conversationId, toolName, exportDir } = ctx;
    const request = { action, args, conversationId, toolName, exportDir };
    const { done, contextError } = await this.whileActive(() => this.send(qualifiedName, request, ctx, stop));
    if (done.ok) return done.output;
    if (done.invalidArgs) {
      const { path, message } = done.invalidArgs;
      throw new ToolError('invalid_args', `Invalid args for ${qualifiedName}: ${path}: ${message}`);
    }
    // The handler passed on a failure of the service's own context (say, the database is down):
    // that failure, not a tool_error, is what the manager must see.
    if (contextError instanceof Error && done.error?.fromContext) {
      throw contextError;
    }
    throw fromWire(done.error);
  }

  /**
   * Parses args with the tool's own schema in the worker, running nothing:
   * how a dry run checks them. Resolves the parsed args or the first problem.
   */
  async check(
    qualifiedName: string,
    action: string,
    args: Record<string, unknown>,
    stop?: AbortSignal,
  ): Promise<ParseArgsResult> {
    const request = { action, args, conversationId: '', toolName: '', exportDir: '', checkOnly: true };
    const { done } = await this.whileActive(() => this.send(qualifiedName, request, undefined, stop));
    if (done.ok) return { ok: true, value: done.output as Record<string, unknown> };
    if (done.invalidArgs) return { ok: false, ...done.invalidArgs };
    throw fromWire(done.error);
  }

  private async whileActive<T>(task: () => Promise<T>): Promise<T> {
    this.active++;
    try {
      await this.load();
      return await task();
    } finally {
      this.active--;
      if (this.retired && this.active === 0) this.stopWorker();
    }
  }

  /** After a reload: stop the worker once the calls in flight (loading or running) have finished. */
  retire(): void {
    this.retired = true;
    if (this.active === 0) this.stopWorker();
  }

  close(): void {
    this.retired = true;
    this.stopWorker();
  }

  private async send(
    qualifiedName: string,
    request: Omit<RunRequest, 'type' | 'id'>,
    ctx: ToolContext | undefined,
    stop?: AbortSignal,
  ): Promise<Outcome> {
    const worker = this.worker;
    if (!worker) throw new Error(`${qualifiedName} was stopped before it started: its worker was replaced`);
    const id = this.nextId++;
    const onStop = (): void => this.replace(worker, `${qualifiedName} was stopped: it did not finish in time`);
    stop?.addEventListener('abort', onStop, { once: true });
    try {
      return await new Promise((resolve, reject) => {
        this.pending.set(id, { worker, ctx, qualifiedName, resolve, reject });
        worker.ref(); // while a call is in flight, its worker keeps the process alive like in-process code would
        this.post(worker, { type: 'run', id, ...request });
        if (stop?.aborted) onStop();
      });
    } finally {
      stop?.removeEventListener('abort', onStop);
      this.pending.delete(id);
      if (![...this.pending.values()].some((p) => p.worker === worker)) worker.unref();
    }
  }

  private stopWorker(): void {
    if (this.worker) this.kill(this.worker, 'the tool sandbox was closed');
  }

  private spawn(): Promise<ToolMeta> {
    const worker = startWorker(this.file);
    worker.unref(); // an idle sandbox must never be what keeps the service alive
    this.worker = worker;
    return new Promise<ToolMeta>((resolve, reject) => {
      const fail = (reason: string): void => {
        this.kill(worker, reason);
        reject(new SkipModule(reason));
      };
      // The load timeout is the module's: it starts when the worker has booted
      // (which, with several workers starting on a busy machine, can take
      // seconds) and begins to load it. Booting has its own, generous bound.
      let timer = setTimeout(
        () => fail(`its worker did not start within ${WORKER_BOOT_TIMEOUT_MS} ms`),
        WORKER_BOOT_TIMEOUT_MS,
      );
      let loaded = false;
      const settle = (): void => clearTimeout(timer);
      worker.on('message', (m: WorkerMessage) => {
        if (m.type === 'loading') {
          settle();
          timer = setTimeout(
            () => fail(`did not finish loading within ${this.loadTimeoutMs} ms; its worker was stopped`),
            this.loadTimeoutMs,
          );
        } else if (m.type === 'loaded') {
          settle();
          loaded = true;
          resolve(m.tool);
        } else if (m.type === 'skipped') {
          settle();
          fail(m.reason);
        } else this.onMessage(worker, m);
      });
      // A loaded worker that ends on its own during a call (a tool's uncaught exception, process.exit):
      // its calls in flight fail and its successor starts at once, as after a timeout, so the next call
      // finds it loading or loaded. Otherwise the next call starts one. Before loading, the registry
      // logs the skip.
      const ended = (reason: string): void => {
        settle();
        // Only while calls were in flight: a module whose own timer keeps throwing must not respawn forever.
        const busy = [...this.pending.values()].some((p) => p.worker === worker);
        if (loaded && busy && this.worker === worker) this.replace(worker, reason);
        else fail(reason);
      };
      worker.on('error', (err) => {
        if (loaded) this.logger.warn({ file: this.file, err }, `Tool worker failed: ${errorMessage(err)}`);
        ended(`its worker failed: ${errorMessage(err)}`);
      });
      worker.on('exit', (code) => ended(`its worker exited with code ${code}`));
    });
  }

  /**
   * Stops a worker a caller gave up on and starts its successor at once, so
   * the module is loaded again before the next call arrives.
   */
  private replace(worker: Worker, reason: string): void {
    this.kill(worker, reason);
    if (this.retired || this.ready) return;
    this.ready = this.spawn();
    // A failure here is the next call's to report: kill() has cleared `ready`, so that call starts another.
    this.ready.catch(() => undefined);
  }

  /** Forgets the worker, rejects its calls in flight, and terminates it; the next call starts a new one. */
  private kill(worker: Worker, reason: string): void {
    if (this.worker === worker) {
      this.worker = undefined;
      this.ready = undefined;
    }
    for (const p of this.pending.values()) if (p.worker === worker) p.reject(new Error(reason));
    void worker.terminate();
  }

  private post(worker: Worker, message: HostMessage): void {
    worker.postMessage(message);
  }

  private onMessage(worker: Worker, m: WorkerMessage): void {
    if (m.type === 'ctx') {
      void this.serveContext(worker, m.id, m.seq, m.method, m.args);
      return;
    }
    const p = m.type === 'log' || m.type === 'done' ? this.pending.get(m.id) : undefined;
    if (!p || p.worker !== worker) return; // the call is over: its caller has its answer
    if (m.type === 'log') {
      if (!LOG_LEVELS.includes(m.level)) return;
      const obj = typeof m.obj === 'object' && m.obj !== null ? m.obj : { value: m.obj };
      (p.ctx?.logger ?? this.logger)[m.level](obj, m.msg);
    } else if (m.type === 'done') {
      p.resolve({ done: m, contextError: p.contextError });
    }
  }

  /** One shared-context call of a running action, on that action's own context. */
  private async serveContext(
    worker: Worker,
    id: number,
    seq: number,
    method: CtxMethod,
    args: unknown[],
  ): Promise<void> {
    const p = this.pending.get(id);
    let reply: HostMessage;
    try {
      if (!p?.ctx || p.worker !== worker) throw new Error('The action is over; its shared context is closed');
      reply = { type: 'ctx-reply', seq, ok: true, value: await invoke(p.ctx.sharedContext, method, args) };
    } catch (err) {
      if (p && !(err instanceof ToolError)) p.contextError = err;
      const error: WireError = err instanceof ToolError ? toolErrorWire(err) : { message: errorMessage(err) };
      reply = { type: 'ctx-reply', seq, ok: false, error };
    }
    // A worker already terminated cannot take the answer; its call has been answered as failed.
    if (this.pending.get(id)?.worker === worker) this.post(worker, reply);
  }
}
