/**
 * A transaction's operations (API.md, "Shared context, M6") applied inside
 * one database transaction: the REST endpoint's own (transactions.ts) or a
 * write action's unit of work (shared-context.ts). Either caller rolls the
 * transaction back when an operation fails, so none is written.
 *
 * Locking: every existing resource the operations name is locked first, in
 * one statement, in name order (ResourceStore.lockAll). Two transactions over
 * overlapping names then take their row locks in the same order and wait for
 * each other instead of deadlocking; what each operation is checked against
 * (exists, at `ifMatch`) cannot change under it, and the writes that follow
 * only touch rows already held. Names missing at that point are not locked:
 * two transactions that create the same names in opposite orders can still
 * deadlock, and the callers run an aborted transaction again.
 */
import type { ResourceStore, Transaction } from './ports';
import type { Resource, ToolErrorCode } from './tool-interface';
import { ToolError } from './tool-interface';
import { type CheckedOperation, ZTransactionOperations } from './transaction-operations';

/** A failure of operation `index`: the message names it (`operations/K: …`), the error carries it. */
export function operationError(code: ToolErrorCode, index: number, message: string): ToolError {
  return new ToolError(code, `operations/${index}: ${message}`, index);
}

/** The operations, checked: a ToolError (invalid_args) names the first bad one and its field. */
export function checkOperations(raw: unknown): CheckedOperation[] {
  const parsed = ZTransactionOperations.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const [index, ...field] = issue.path;
  if (typeof index !== 'number') throw new ToolError('invalid_args', `operations: ${issue.message}`);
  const op = (raw as { op?: unknown }[])[index]?.op;
  const message =
    issue.code === 'invalid_union' &&
    field.length === 0 &&
    !['create', 'update', 'delete', 'check'].includes(op as string)
      ? 'op: must be one of create, update, delete, check'
      : `${field.length > 0 ? `${field.join('/')}: ` : ''}${issue.message}`;
  throw operationError('invalid_args', index, message);
}

export interface BatchDeps {
  store: ResourceStore;
  /** The data's JSON text; a ToolError when it is over the size limit (ResourceService.encode). */
  encode(data: unknown): string;
}

export interface Batch {
  conversationId: string;
  /** Who writes: a tool's name, or `client`. */
  by: string;
  operations: CheckedOperation[];
}

export interface Applied {
  /** One per operation: the resource as the operation left it (checked, created, updated); null for a delete. */
  results: (Resource | null)[];
  /** `op:name@version` per operation (a delete: the version it removed), for the audit: names and versions, never data. */
  trail: string;
}

/** What a batch sees of each name it touches: the locked row, then what each operation made of it. */
type State = Map<string, Resource | undefined>;

/** Applies `batch` in `tx`; the first failing operation throws (operationError) and the caller rolls back. */
export async function applyOperations(deps: BatchDeps, batch: Batch, tx: Transaction): Promise<Applied> {
  const { operations } = batch;
  // Sizes first: an oversized operation fails before any statement is sent.
  const json = operations.map((op, i) => encodeAt(deps, op, i));
  const names = [...new Set(operations.map((op) => op.name))];
  const state: State = new Map(names.map((name) => [name, undefined]));
  for (const resource of await deps.store.lockAll(batch.conversationId, names, tx)) {
    state.set(resource.name, resource);
  }
  const results: (Resource | null)[] = [];
  const trail: string[] = [];
  for (const [index, op] of operations.entries()) {
    const before = state.get(op.name);
    const result = await applyOne(deps.store, { batch, op, index, json: json[index] }, state, tx);
    results.push(result);
    trail.push(`${op.op}:${op.name}@${(result ?? before)?.version ?? 0}`);
  }
  return { results, trail: trail.join(' ') };
}

function encodeAt(deps: BatchDeps, op: CheckedOperation, index: number): string | undefined {
  if (op.op !== 'create' && op.op !== 'update') return undefined;
  try {
    return deps.encode(op.data);
  } catch (err) {
    if (err instanceof ToolError) throw operationError(err.code, index, err.message);
    throw err;
  }
}

interface Step {
  batch: Batch;
  op: CheckedOperation;
  index: number;
  json: string | undefined;
}

async function applyOne(store: ResourceStore, step: Step, state: State, tx: Transaction): Promise<Resource | null> {
  const { batch, op, index } = step;
  const { conversationId, by } = batch;
  const { name } = op;
  if (op.op === 'create') {
    if (state.get(name)) throw operationError('resource_exists', index, `Resource already exists: ${name}`);
    // Missing when locked, but another transaction may have created it since (it then wins).
    const created = await store.create(conversationId, name, step.json!, by, { tx, ttlSeconds: op.ttlSeconds });
    if (!created) throw operationError('resource_exists', index, `Resource already exists: ${name}`);
    state.set(name, created);
    return created;
  }
  const current = existing(state, op, index);
  if (op.op === 'check') return current;
  if (op.op === 'update') {
    // The row is locked at `current.version`: this changes it (the condition only guards the invariant).
    const versions = { in: [current.version] };
    const { ttlSeconds } = op;
    const updated = await store.update({ conversationId, name, json: step.json!, by, versions, ttlSeconds }, tx);
    if (!updated) throw operationError('resource_not_found', index, `Resource not found: ${name}`);
    state.set(name, updated);
    return updated;
  }
  if (!(await store.delete(conversationId, name, [current.version], tx))) {
    throw operationError('resource_not_found', index, `Resource not found: ${name}`);
  }
  state.set(name, undefined);
  return null;
}

/** The resource as the batch sees it, at `ifMatch` when given. */
function existing(state: State, op: CheckedOperation, index: number): Resource {
  const current = state.get(op.name);
  if (!current) throw operationError('resource_not_found', index, `Resource not found: ${op.name}`);
  const ifMatch = 'ifMatch' in op ? op.ifMatch : undefined;
  if (ifMatch !== undefined && current.version !== ifMatch) {
    throw operationError(
      'precondition_failed',
      index,
      `Resource ${op.name} is at version ${current.version}, not ${ifMatch}`,
    );
  }
  return current;
}

/** Whether operations before `index` sent writes (so a failure there leaves the unit of work with some). */
export function wroteBefore(operations: CheckedOperation[], index: number): boolean {
  return operations.slice(0, index).some((op) => op.op !== 'check');
}
