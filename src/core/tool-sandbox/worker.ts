/**
 * The sandbox worker: loads one TOOLS_DIR module in its own thread, reports
 * the module's tools to the host, then runs actions on request. The shared
 * context and the logger a handler sees are proxies that ask the host over
 * the message port, so the host keeps the database, the transaction and the
 * permission check; a handler that spins blocks only this thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { findCause } from '../errors';
import { SkipModule, errorMessage, loadToolModule, type LoadedTool } from '../tool-module';
import { contractsToJson } from '../tool-dependencies';
import {
  ToolError,
  type ResourceEvent,
  type SharedContext,
  type ToolContext,
  type ToolLogger,
} from '../tool-interface';
import { handlerAction } from '../tool-subscriptions';
import {
  CTX_METHODS,
  LOG_LEVELS,
  type CtxMethod,
  type CtxReply,
  type HostMessage,
  type LogLevel,
  type RunRequest,
  type WireError,
  type WorkerInit,
  type WorkerMessage,
} from './protocol';

const port = parentPort;
if (!port) throw new Error('tool-sandbox/worker.ts must run in a worker thread');

function send(message: WorkerMessage): void {
  port!.postMessage(message);
}

/** The errors the host's context calls failed with here (not ToolErrors): the service's, not the tool's. */
const contextFailures = new WeakSet<object>();

/** Whether the tool passed on (or wrapped) a failure of the service's context. */
function fromContext(err: unknown): boolean {
  return findCause(err, (e) => contextFailures.has(e)) !== undefined;
}

function toWire(err: unknown): WireError {
  if (err instanceof ToolError) {
    return { code: err.code, message: err.message, ...(err.index !== undefined ? { index: err.index } : {}) };
  }
  return {
    message: errorMessage(err),
    ...(err instanceof Error && err.stack ? { stack: err.stack } : {}),
    ...(fromContext(err) ? { fromContext: true } : {}),
  };
}

/** A host answer back into what the tool would have seen in-process: a ToolError keeps its class. */
function fromWire(err: WireError): Error {
  if (err.code) return new ToolError(err.code, err.message, err.index);
  const failure = new Error(err.message);
  contextFailures.add(failure);
  return failure;
}

// ---- Shared-context calls forwarded to the host ----

let nextSeq = 1;
const waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();

function askHost(id: number, method: CtxMethod, args: unknown[]): Promise<unknown> {
  const seq = nextSeq++;
  return new Promise((resolve, reject) => {
    waiting.set(seq, { resolve, reject });
    send({ type: 'ctx', id, seq, method, args });
  });
}

function onReply(reply: CtxReply): void {
  const w = waiting.get(reply.seq);
  if (!w) return;
  waiting.delete(reply.seq);
  if (reply.ok) w.resolve(reply.value);
  else w.reject(fromWire(reply.error ?? { message: 'shared context call failed' }));
}

function sharedContextFor(id: number): SharedContext {
  const ctx = {} as Record<CtxMethod, (...args: unknown[]) => Promise<unknown>>;
  for (const method of CTX_METHODS) ctx[method] = (...args) => askHost(id, method, args);
  return ctx as unknown as SharedContext;
}

function log(id: number, level: LogLevel, obj: unknown, msg?: string): void {
  try {
    send({ type: 'log', id, level, obj, msg });
  } catch {
    // Not cloneable (a function, a socket): its text is the best the host can log.
    send({ type: 'log', id, level, obj: String(obj), msg });
  }
}

function loggerFor(id: number): ToolLogger {
  return Object.fromEntries(
    LOG_LEVELS.map((level) => [level, (obj: object | string, msg?: string) => log(id, level, obj, msg)]),
  ) as unknown as ToolLogger;
}

// ---- Running actions ----

let tool: LoadedTool | undefined;

function contextOf(req: RunRequest, args: Record<string, unknown>): ToolContext {
  return {
    conversationId: req.conversationId,
    toolName: req.toolName,
    action: req.action,
    args,
    sharedContext: sharedContextFor(req.id),
    logger: loggerFor(req.id),
    exportDir: req.exportDir,
  };
}

/** Runs a handler and sends its outcome as the call's `done`. */
async function finish(req: RunRequest, handler: () => unknown): Promise<void> {
  let output: unknown;
  try {
    output = await handler();
  } catch (err) {
    send({ type: 'done', id: req.id, ok: false, error: toWire(err) });
    return;
  }
  try {
    send({ type: 'done', id: req.id, ok: true, output });
  } catch (err) {
    send({ type: 'done', id: req.id, ok: false, error: { message: `output cannot be sent: ${errorMessage(err)}` } });
  }
}

async function run(req: RunRequest): Promise<void> {
  // A subscription's handler (`on:TYPE`, never an action's name): the event is its args.
  const sub = tool?.subscriptions?.find((s) => handlerAction(s.type) === req.action);
  if (sub) return finish(req, () => sub.handler(req.args as unknown as ResourceEvent, contextOf(req, {})));
  const action = tool?.actions.find((a) => a.name === req.action);
  if (!action) {
    send({ type: 'done', id: req.id, ok: false, error: { message: `no action ${req.action} in this worker` } });
    return;
  }
  const parsed = action.parseArgs(req.args);
  if (!parsed.ok) {
    send({ type: 'done', id: req.id, ok: false, invalidArgs: { path: parsed.path, message: parsed.message } });
    return;
  }
  if (req.checkOnly) {
    send({ type: 'done', id: req.id, ok: true, output: parsed.value });
    return;
  }
  return finish(req, () => action.run(parsed.value, contextOf(req, parsed.value)));
}

port.on('message', (message: HostMessage) => {
  if (message.type === 'ctx-reply') onReply(message);
  else void run(message);
});

// ---- Loading the module ----

async function load(file: string): Promise<void> {
  send({ type: 'loading' });
  try {
    tool = await loadToolModule(file);
  } catch (err) {
    send({ type: 'skipped', reason: err instanceof SkipModule ? err.message : errorMessage(err) });
    return;
  }
  const actions = tool.actions.map((a) => ({
    name: a.name,
    description: a.description,
    level: a.level,
    inputSchema: a.inputSchema,
    ...(a.outputSchema ? { outputSchema: a.outputSchema } : {}),
    ...contractsToJson(a),
  }));
  const subscriptions = tool.subscriptions?.map(({ type, names, level }) => ({
    type,
    level,
    ...(names ? { names: [...names] } : {}),
  }));
  const { name, version, description } = tool;
  send({ type: 'loaded', tool: { name, version, description, actions, ...(subscriptions ? { subscriptions } : {}) } });
}

void load((workerData as WorkerInit).file);
