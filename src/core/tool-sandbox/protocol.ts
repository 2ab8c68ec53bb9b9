/**
 * The messages between the service (host) and a tool sandbox worker. Every
 * value crosses by structured clone, so only data travels: the worker never
 * sees a database handle, nor the service's environment (it starts with an
 * empty process.env, so no DATABASE_URL), and the host never runs tool code.
 *
 * Load:  worker → host  `loaded` (metadata) or `skipped` (reason), once.
 * Call:  host → worker  `run`; worker → host any number of `ctx` and `log`,
 *        each `ctx` answered by a `ctx-reply`; finally worker → host `done`.
 */
import type { LoadedProduct, LoadedRequirement } from '../tool-dependencies';
import type { SubscriptionMeta } from '../tool-subscriptions';
import type { Level, ToolErrorCode } from '../tool-interface';

/** What the host needs to publish a tool without loading its code. */
export interface ToolMeta {
  name: string;
  version: string;
  description: string;
  actions: {
    name: string;
    description: string;
    level: Level;
    inputSchema: Record<string, unknown>;
    /** The declared output schema (the worker checks outputs against it). */
    outputSchema?: Record<string, unknown>;
    /** Its contracts, schemas as JSON Schema (the host rebuilds their checks: tool-dependencies.ts). */
    requires?: Omit<LoadedRequirement, 'problem'>[];
    produces?: Omit<LoadedProduct, 'problem'>[];
  }[];
  /** Its handlers of resource events (run in the worker as action `on:TYPE`, the event as args). */
  subscriptions?: SubscriptionMeta[];
}

/** An error as it crosses the boundary: a ToolError keeps its code, anything else only its text. */
export interface WireError {
  code?: ToolErrorCode;
  message: string;
  /** A transaction's failing operation (ToolError.index). */
  index?: number;
  /** The worker-side stack of an unexpected error: for the service's log only, never for a response. */
  stack?: string;
  /** The tool passed on (or wrapped) an error a shared-context call failed with: the service's trouble. */
  fromContext?: boolean;
}

/** The SharedContext methods a worker may call; nothing else is served. */
export const CTX_METHODS = [
  'createResource',
  'getResource',
  'updateResource',
  'listResources',
  'deleteResource',
  'queryResources',
  'transaction',
] as const;
export type CtxMethod = (typeof CTX_METHODS)[number];

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface RunRequest {
  type: 'run';
  id: number;
  action: string;
  /** Raw args: the worker parses them with the tool's own zod schema. */
  args: Record<string, unknown>;
  conversationId: string;
  toolName: string;
  exportDir: string;
  /** Parse the args and answer with them, running nothing (a dry run). */
  checkOnly?: boolean;
}

export interface CtxReply {
  type: 'ctx-reply';
  seq: number;
  ok: boolean;
  value?: unknown;
  error?: WireError;
}

export type HostMessage = RunRequest | CtxReply;

export type WorkerMessage =
  /** The worker has started and now loads the module: the load timeout runs from here. */
  | { type: 'loading' }
  | { type: 'loaded'; tool: ToolMeta }
  | { type: 'skipped'; reason: string }
  | { type: 'ctx'; id: number; seq: number; method: CtxMethod; args: unknown[] }
  | { type: 'log'; id: number; level: LogLevel; obj: unknown; msg?: string }
  | { type: 'done'; id: number; ok: true; output: unknown }
  | { type: 'done'; id: number; ok: false; invalidArgs?: { path: string; message: string }; error?: WireError };

/** What the worker is started with. */
export interface WorkerInit {
  file: string;
}
