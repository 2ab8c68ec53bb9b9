/**
 * The tool interface (plugin SDK). Everything in `tools/` and in TOOLS_DIR is
 * written against this file only: a tool never imports Prisma or express.
 *
 * Two forms load:
 * 1. A toolset (seed 001): `defineTool({ name, version, description, actions })`
 *    where each action has a description, a required level, a zod input schema
 *    and a handler `(args, ctx)`.
 * 2. The seed's class form (seed 002, "Minimal Tool Structure"): a class
 *    extending `BaseTool` with `execute(action, context)` and a static
 *    `identity: { name, version, capabilities }`.
 *
 * A module in TOOLS_DIR may also export a factory `(sdk) => tool`, which
 * receives this module (so it needs no node_modules of its own).
 */
import { z } from 'zod';
import { ID_PATTERN, ID_PREFIX_PATTERN, ID_PREFIX_RULE, ID_RULE } from './resource-names';

/** 1 read, 2 write, 3 execute. */
export type Level = 1 | 2 | 3;
export const LEVELS: readonly Level[] = [1, 2, 3];
export type Alignment = 'aligned' | 'agnostic' | 'contradiction';

/** A resource of the conversation's shared context. */
export interface Resource {
  name: string;
  /** Any JSON value. */
  data: unknown;
  /** Tool name, or `client` for the REST endpoints. */
  createdBy: string;
  updatedBy: string;
  /** Epoch milliseconds. */
  createdAt: number;
  updatedAt: number;
  /** Starts at 1 and grows by 1 on each update. */
  version: number;
  /** Epoch ms when it expires (set by a write with `ttlSeconds`); absent when it never does. */
  expiresAt?: number;
}

/**
 * The shared context as a tool sees it: already bound to one conversation and
 * to the calling tool, so `createdBy`/`updatedBy` are always right and no
 * other conversation is reachable. Inside one action every write commits
 * together with the others, or none does.
 *
 * Concurrency, what a tool may rely on:
 * - In a write- or execute-level action (level >= 2), `getResource` locks
 *   the resource until the action ends (commits or rolls back). Another
 *   action that reads the same resource waits, then sees this action's
 *   result. So "read, compute, `updateResource`" never loses a concurrent
 *   update, across processes too; no version check is needed.
 * - A missing resource is not locked: of two actions that both find it
 *   missing and create it, one wins and the other's `createResource` throws
 *   `resource_exists`; nothing is overwritten.
 * - `listResources` never locks: a listing is a snapshot, not a claim. Read
 *   a listed resource with `getResource` before writing something computed
 *   from it.
 * - Actions that lock several resources in different orders can deadlock;
 *   Postgres then aborts one of them and the service runs that action again
 *   from the start on a fresh transaction (at most 3 runs in all). A
 *   handler may therefore run more than once for one call, so side effects
 *   outside the shared context should be repeatable. Locking in a fixed
 *   order (e.g. by name) avoids the retry.
 * - Level-1 (read) actions take no locks and may read data another action
 *   is about to change.
 *
 * Failures are thrown as `ToolError` with codes `resource_not_found`,
 * `resource_exists`, `resource_too_large` or `invalid_args` (bad name), and
 * from `transaction` also `precondition_failed` (a stale `ifMatch`).
 */
export interface SharedContext {
  createResource(name: string, data: unknown, options?: WriteOptions): Promise<Resource>;
  getResource(name: string): Promise<Resource | undefined>;
  updateResource(name: string, data: unknown, options?: WriteOptions): Promise<Resource>;
  listResources(options?: { prefix?: string }): Promise<Resource[]>;
  /** true when it existed. */
  deleteResource(name: string): Promise<boolean>;
  /**
   * All or nothing (API.md, "Shared context, M6"): one result per operation
   * (null for `delete`, the resource for the others), applied in order in the
   * action's unit of work, every resource named locked first in name order.
   * A failing operation throws a ToolError whose `index` names it (message
   * `operations/K: …`), and the action's writes roll back: when operations
   * before it had written, the action fails with that error even if the tool
   * catches it (a failure before any write leaves the action free to go on).
   * Write-level actions only.
   */
  transaction(operations: TransactionOperation[]): Promise<(Resource | null)[]>;
  /** A filtered, sorted page (SQL/JSON path `filter` over `data`). */
  queryResources(query: ResourceQuery): Promise<ResourcePage>;
}

// ---- M6 (API.md, "Shared context, M6") ---------------------------------------

/** Options of a write: `ttlSeconds` (1 – 31,536,000) sets `expiresAt`; without it the resource keeps no expiry. */
export interface WriteOptions {
  ttlSeconds?: number;
}

/** One operation of a transaction. `check` only asserts that the resource exists (at `ifMatch`). */
export interface TransactionOperation {
  op: 'create' | 'update' | 'delete' | 'check';
  name: string;
  data?: unknown;
  /** The version the resource must be at. */
  ifMatch?: number;
  ttlSeconds?: number;
}

export type ResourceSortKey = 'name' | 'updatedAt' | 'createdAt';
/** A sort key, `-` first for descending. */
export type ResourceSort = ResourceSortKey | `-${ResourceSortKey}`;

export interface ResourceQuery {
  /** A SQL/JSON path predicate over `data` (`$.status == "open" && $.amount > 100`). */
  filter?: string;
  sort?: ResourceSort;
  limit?: number;
  /** An opaque cursor from a previous page's nextCursor. */
  cursor?: string;
  prefix?: string;
  createdBy?: string;
  updatedBy?: string;
  /** Epoch ms: only resources updated at or after it. */
  updatedSince?: number;
}

export interface ResourcePage {
  resources: Resource[];
  nextCursor: string | null;
}

/** What an action needs before it runs: a resource (name with `{arg}` placeholders), optionally by whom and of what shape. */
export interface ResourceRequirement {
  resource: string;
  createdBy?: string;
  schema?: z.ZodType;
}

/** What an action writes: a resource (name with `{arg}` placeholders) whose data must match `schema` when given. */
export interface ResourceProduct {
  resource: string;
  schema?: z.ZodType;
}

export type ResourceEventType = 'resource.created' | 'resource.updated' | 'resource.deleted' | 'resource.expired';

/** A resource event as GET /events gives it (`subject` is the resource without `data`). */
export interface ResourceEvent {
  id: number;
  type: ResourceEventType;
  conversationId: string;
  /** Epoch ms. */
  at: number;
  subject: Omit<Resource, 'data'>;
}

/** A tool's handler for resource events of its conversation; runs as the tool while its level is at least `level`. */
export interface ResourceSubscription {
  /** Globs (`*` wildcards) over resource names; all when absent. */
  names?: string[];
  level: Level;
  handler: (event: ResourceEvent, ctx: ToolContext) => unknown;
}

export interface ToolLogger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

export interface ToolContext<A = Record<string, unknown>> {
  conversationId: string;
  /** The name of the tool being run (the caller, for resource ownership). */
  toolName: string;
  action: string;
  args: A;
  sharedContext: SharedContext;
  logger: ToolLogger;
  /** Directory that execute-level export actions may write into (EXPORT_DIR). */
  exportDir: string;
}

/** Codes a tool (or the shared context) may throw; anything else thrown is a `tool_error`. */
export const TOOL_ERROR_CODES = [
  'resource_not_found',
  'resource_exists',
  'resource_too_large',
  'invalid_args',
  /** A transaction's operation whose `ifMatch` is not the resource's version. */
  'precondition_failed',
] as const;
export type ToolErrorCode = (typeof TOOL_ERROR_CODES)[number];

export function isToolErrorCode(code: unknown): code is ToolErrorCode {
  return (TOOL_ERROR_CODES as readonly unknown[]).includes(code);
}

export class ToolError extends Error {
  constructor(
    public readonly code: ToolErrorCode,
    message: string,
    /** A transaction's failing operation: its position in the list, from 0 (the message starts `operations/K: `). */
    public readonly index?: number,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}

export interface ActionDefinition<S extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  description: string;
  level: Level;
  /** zod schema of the args; an object schema (published as JSON Schema). */
  input: S;
  /**
   * Optional zod schema of what the handler returns; an object schema,
   * published as JSON Schema (`outputSchema` in GET /tools and MCP
   * tools/list). MCP results carry the output as `structuredContent`, checked
   * against it first: an output that does not conform is an `isError` result
   * there (REST's negotiate returns outputs as they are, adding no work).
   */
  output?: O;
  handler: (args: z.output<S>, ctx: ToolContext<z.output<S>>) => unknown;
  /**
   * Optional, for read-level actions: the name of the one resource the
   * handler will read, derived from the validated args. The service then
   * fetches it in the same database round trip as the permission check, and
   * the handler's `getResource(name)` is answered from there. A hint only:
   * the handler behaves the same without it.
   */
  prefetch?: (args: z.output<S>) => string | undefined;
  /**
   * Optional, for write-level actions whose handler's one call to the shared
   * context is a write (creates, updates or deletes one resource), made as
   * its last step. The service then sends that write and the call's audit entry
   * as one statement that commits on its own: no BEGIN/COMMIT round trips,
   * and the resource's row is locked only while that statement runs (as a
   * bare UPDATE would hold it). The write is atomic by itself; the entry is
   * written only if the write changed a row. A promise the handler keeps: a
   * second shared-context call fails the call (tool_error) after the first committed,
   * so declare it only for a handler that plainly writes once. Honoured for
   * in-process tools only; TOOLS_DIR tools always get a transaction.
   */
  singleWrite?: boolean;
  /** Coordination contracts (API.md, "Tool dependencies"): checked before the action runs. */
  requires?: ResourceRequirement[];
  /** What the action writes; a `schema` is enforced on that write (tool_error otherwise, nothing written). */
  produces?: ResourceProduct[];
}

export interface ToolDefinition {
  name: string;
  version: string;
  description: string;
  actions: Record<string, ActionDefinition>;
  /** Handlers for resource events of the conversations the tool is used in (API.md, "Subscriptions"). */
  on?: Partial<Record<ResourceEventType, ResourceSubscription>>;
}

/**
 * Identity typing helper that keeps each action's args typed from its schema
 * (and, with an output schema, its handler's return type checked against it).
 */
export function defineAction<S extends z.ZodType, O extends z.ZodType = z.ZodType>(
  action: ActionDefinition<S, O> & {
    handler: (args: z.output<S>, ctx: ToolContext<z.output<S>>) => z.input<O> | Promise<z.input<O>>;
  },
): ActionDefinition {
  return action as unknown as ActionDefinition;
}

export function defineTool(tool: ToolDefinition): ToolDefinition {
  return tool;
}

// ---- The seed's class form ------------------------------------------------

export interface ToolResult {
  success: boolean;
  output?: unknown;
  error?: string;
}

export interface ToolIdentity {
  name: string;
  version: string;
  capabilities: string[];
  description?: string;
  /** Required level per capability; otherwise inferred from the verb. */
  levels?: Record<string, Level>;
  /** Description per capability. */
  descriptions?: Record<string, string>;
}

export abstract class BaseTool {
  constructor(public readonly identity: ToolIdentity) {}
  abstract execute(action: string, context: ToolContext): Promise<ToolResult> | ToolResult;
}

export interface ToolClass {
  new (): BaseTool;
  identity: ToolIdentity;
}

const READ_VERBS = new Set(['read', 'get', 'list', 'query', 'search', 'count', 'greet']);
const WRITE_VERBS = new Set(['create', 'update', 'write', 'set', 'transform', 'delete']);

/**
 * The level a class-form capability needs when its identity names none: from
 * its first word. Unknown verbs get 3 (execute), the safe default.
 */
export function levelFromVerb(capability: string): Level {
  const verb = capability.split('-')[0] ?? '';
  if (READ_VERBS.has(verb)) return 1;
  if (WRITE_VERBS.has(verb)) return 2;
  return 3;
}

/** What a TOOLS_DIR factory module receives. */
export interface ToolSdk {
  z: typeof z;
  defineTool: typeof defineTool;
  defineAction: typeof defineAction;
  BaseTool: typeof BaseTool;
  ToolError: typeof ToolError;
}

export const sdk: ToolSdk = { z, defineTool, defineAction, BaseTool, ToolError };

// ---- Helpers shared by resource tools --------------------------------------

/** JSON text with object keys sorted, no whitespace: equal values give equal text (the service's own, canonical-json.ts). */
export { canonicalJson } from './canonical-json';

/** The schema of a transaction's operations (transaction-operations.ts), for a tool's input. */
export { MAX_TRANSACTION_OPERATIONS, ZTransactionOperation, ZTransactionOperations } from './transaction-operations';

/** Resource names as the API defines them (resource-names.ts), for tools that check names themselves. */
export { ID_PATTERN as RESOURCE_NAME_PATTERN, isValidId } from './resource-names';

/** `ttlSeconds` of a write (1 to 31,536,000), as action inputs take it (resource-ttl.ts). */
export { ZTtlSeconds } from './resource-ttl';

export const ZResourceName = z
  .string()
  .regex(ID_PATTERN, ID_RULE)
  .describe('Resource name in the conversation shared context');

/** The `resource_not_found` error every tool (and the shared context) reports the same way. */
export function resourceNotFound(name: string): ToolError {
  return new ToolError('resource_not_found', `Resource not found: ${name}`);
}

/** The resource, or resourceNotFound. */
export async function requireResource(shared: SharedContext, name: string): Promise<Resource> {
  const resource = await shared.getResource(name);
  if (!resource) throw resourceNotFound(name);
  return resource;
}

/** A resource as actions return it (Resource), for output schemas. */
export const ZResourceOutput = z
  .object({
    name: z.string(),
    data: z.unknown().describe('The resource data, any JSON value'),
    createdBy: z.string(),
    updatedBy: z.string(),
    createdAt: z.number().describe('Epoch milliseconds'),
    updatedAt: z.number().describe('Epoch milliseconds'),
    version: z.number().int().min(1),
    expiresAt: z.number().optional().describe('Epoch milliseconds; absent when it never expires'),
  })
  .describe('A resource of the conversation shared context');

/** A resource-name prefix filter: the name alphabet, possibly empty. */
export const ZResourcePrefix = z
  .string()
  .regex(ID_PREFIX_PATTERN, ID_PREFIX_RULE)
  .describe('Only resources whose name starts with this prefix');
