/**
 * Tool dependencies (API.md, "Shared context, M6"): an action's coordination
 * contracts, `requires` (resources that must exist before it runs) and
 * `produces` (resources it writes, with the shape they must have), and the
 * graph they draw between actions.
 *
 * Resource names in a contract are patterns: literal name characters and
 * `{arg}` placeholders, filled from the call's validated args. How patterns
 * meet, for the graph: a placeholder stands for any text, so
 * `report-{id}` meets `report-{day}` and `report-2024`, and `{name}` meets
 * every name. A placeholder whose arg a call leaves out stays "any text"
 * there too (a `produces` of `{target}` without `target` covers every
 * write), and a `requires` whose arg is left out, or is no resource name,
 * is not checked (the handler answers that call as it would without one).
 *
 * An action that requires what it produces itself (a read-modify-write) is
 * no edge of the graph. A cycle of declared contracts is refused at load time
 * (refuseCycles): none of its actions could run before the others. Only
 * specific patterns close a cycle: a pattern that is one placeholder alone
 * (`{name}`: any resource, as data-tool's and transform-tool's contracts
 * say) draws its edges in the graph but names no particular resource, so it
 * pins no order; counting it would make every pipeline step that also reads
 * a generic producer's output a cycle with transform-tool.
 */
import { z } from 'zod';
import { isValidId } from './resource-names';
import type { ActionDefinition } from './tool-interface';

/** A `requires` entry as loaded: its schema published as JSON Schema, checked by `problem`. */
export interface LoadedRequirement {
  resource: string;
  createdBy?: string;
  schema?: Record<string, unknown>;
  /** undefined when `data` conforms to the schema; else the first issue (`path: message`). */
  problem?: (data: unknown) => string | undefined;
}

/** A `produces` entry as loaded. */
export interface LoadedProduct {
  resource: string;
  schema?: Record<string, unknown>;
  problem?: (data: unknown) => string | undefined;
}

/** What this module needs of an action (a LoadedAction has it all). */
export interface ContractAction {
  tool: string;
  qualifiedName: string;
  inputSchema: Record<string, unknown>;
  requires?: readonly LoadedRequirement[];
  produces?: readonly LoadedProduct[];
}

export interface DependencyEdge {
  /** The producer, `tool/action`. */
  from: string;
  /** The consumer, `tool/action`. */
  to: string;
  /** The consumer's required resource pattern. */
  resource: string;
}

/** One required resource as negotiate found it (or not) in the decision's read. */
export interface FoundResource {
  name: string;
  createdBy: string;
  /** Present for the names asked with their data (a requirement with a schema). */
  data?: unknown;
}

export interface MissingDependency {
  resource: string;
  /** Actions that produce it, `tool/action`. */
  producers: string[];
  /** Why: it does not exist, it was created by another tool, or its data does not fit the schema. */
  reason: 'absent' | 'created_by' | 'schema';
}

/** Thrown by a write that breaks its action's `produces` schema: the call answers tool_error, nothing written. */
export class ContractViolation extends Error {
  override readonly name = 'ContractViolation';
}

// ---- Declarations ----------------------------------------------------------------

const PLACEHOLDER = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const PATTERN = /^(?:[A-Za-z0-9:_-]|\{[A-Za-z_][A-Za-z0-9_]*\})+$/;
/** Stands for "any text" in a filled pattern: never a resource name character. */
const ANY = '*';

function placeholders(pattern: string): string[] {
  return [...pattern.matchAll(PLACEHOLDER)].map((m) => m[1]!);
}

function issueText(error: z.ZodError): string {
  const first = error.issues[0];
  if (!first) return 'invalid';
  return first.path.length > 0 ? `${first.path.map(String).join('.')}: ${first.message}` : first.message;
}

/** The check of a zod schema: undefined when `data` conforms. */
export function problemOf(schema: z.ZodType): (data: unknown) => string | undefined {
  return (data) => {
    const result = schema.safeParse(data);
    return result.success ? undefined : issueText(result.error);
  };
}

function jsonSchemaOf(schema: z.ZodType, where: string): Record<string, unknown> {
  try {
    const json: Record<string, unknown> = { ...z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) };
    delete json.$schema;
    return json;
  } catch (err) {
    throw new Error(
      `${where}: schema cannot be converted to JSON Schema (${err instanceof Error ? err.message : String(err)})`,
      { cause: err },
    );
  }
}

/** Throws (the caller skips the module) unless the pattern is names and placeholders of the action's own args. */
function checkPattern(pattern: string, inputSchema: Record<string, unknown>, where: string): void {
  if (!PATTERN.test(pattern) || pattern.replace(PLACEHOLDER, 'x').length > 128) {
    throw new Error(`${where}: "${pattern.slice(0, 140)}" is not a resource name with {arg} placeholders`);
  }
  const props = inputSchema.properties;
  const known = typeof props === 'object' && props !== null ? Object.keys(props) : [];
  for (const arg of placeholders(pattern)) {
    if (!known.includes(arg)) throw new Error(`${where}: placeholder {${arg}} names no arg of the action`);
  }
}

type Declared = Pick<ActionDefinition, 'requires' | 'produces'>;

/**
 * An action's declared contracts, checked and loaded: patterns over its own
 * args, `createdBy` a tool name (or `client`). Throws with the reason.
 */
export function loadContracts(
  action: Declared,
  inputSchema: Record<string, unknown>,
  where: string,
): { requires?: LoadedRequirement[]; produces?: LoadedProduct[] } {
  const requires = action.requires?.map((r, i): LoadedRequirement => {
    const at = `${where}: requires[${i}]`;
    checkPattern(r.resource, inputSchema, at);
    if (r.createdBy !== undefined && !/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/.test(r.createdBy)) {
      throw new Error(`${at}: createdBy must be a tool name (kebab-case) or "client"`);
    }
    return {
      resource: r.resource,
      ...(r.createdBy !== undefined ? { createdBy: r.createdBy } : {}),
      ...(r.schema ? { schema: jsonSchemaOf(r.schema, at), problem: problemOf(r.schema) } : {}),
    };
  });
  const produces = action.produces?.map((p, i): LoadedProduct => {
    const at = `${where}: produces[${i}]`;
    checkPattern(p.resource, inputSchema, at);
    return {
      resource: p.resource,
      ...(p.schema ? { schema: jsonSchemaOf(p.schema, at), problem: problemOf(p.schema) } : {}),
    };
  });
  return {
    ...(requires && requires.length > 0 ? { requires } : {}),
    ...(produces && produces.length > 0 ? { produces } : {}),
  };
}

/**
 * The same contracts rebuilt from what a sandbox worker reported (JSON only):
 * the schema checks are rebuilt from the JSON Schema, so a TOOLS_DIR tool's
 * zod refinements that JSON Schema cannot express are not enforced here.
 */
export function contractsFromJson(meta: {
  requires?: readonly LoadedRequirement[];
  produces?: readonly LoadedProduct[];
}): { requires?: LoadedRequirement[]; produces?: LoadedProduct[] } {
  const withCheck = <T extends { schema?: Record<string, unknown> }>(entry: T): T => {
    if (!entry.schema) return { ...entry };
    // A schema z.fromJSONSchema cannot read checks nothing rather than refusing every write.
    let problem: ((data: unknown) => string | undefined) | undefined;
    try {
      problem = problemOf(z.fromJSONSchema(entry.schema));
    } catch {
      problem = undefined;
    }
    return { ...entry, ...(problem ? { problem } : {}) };
  };
  return {
    ...(meta.requires ? { requires: meta.requires.map(withCheck) } : {}),
    ...(meta.produces ? { produces: meta.produces.map(withCheck) } : {}),
  };
}

/** The contracts without their check functions, as a worker sends them (structured clone). */
export function contractsToJson(action: ContractAction): {
  requires?: Omit<LoadedRequirement, 'problem'>[];
  produces?: Omit<LoadedProduct, 'problem'>[];
} {
  const strip = <T extends { problem?: unknown }>({ problem: _problem, ...rest }: T): Omit<T, 'problem'> => rest;
  return {
    ...(action.requires ? { requires: action.requires.map(strip) } : {}),
    ...(action.produces ? { produces: action.produces.map(strip) } : {}),
  };
}

// ---- Patterns ----------------------------------------------------------------------

/** The pattern with each placeholder filled from args (a resource name there), or ANY. */
function fill(pattern: string, args: Record<string, unknown>): string {
  return pattern.replace(PLACEHOLDER, (_, arg: string) => {
    const value = args[arg];
    const text = typeof value === 'string' || typeof value === 'number' ? String(value) : undefined;
    return text !== undefined && isValidId(text) ? text : ANY;
  });
}

/** Whether two filled patterns can name the same resource (ANY: any text, possibly empty). */
export function patternsMeet(a: string, b: string): boolean {
  const memo = new Map<number, boolean>();
  const meet = (i: number, j: number): boolean => {
    const key = i * (b.length + 1) + j;
    const known = memo.get(key);
    if (known !== undefined) return known;
    let result: boolean;
    if (i === a.length && j === b.length) result = true;
    else if (a[i] === ANY) result = meet(i + 1, j) || (j < b.length && meet(i, j + 1));
    else if (b[j] === ANY) result = meet(i, j + 1) || (i < a.length && meet(i + 1, j));
    else result = i < a.length && j < b.length && a[i] === b[j] && meet(i + 1, j + 1);
    memo.set(key, result);
    return result;
  };
  return meet(0, 0);
}

/** A declared pattern as the graph reads it: every placeholder is any text. */
function open(pattern: string): string {
  return fill(pattern, {});
}

// ---- The graph ---------------------------------------------------------------------

/** A pattern that is one placeholder alone: any resource. */
function isGeneric(pattern: string): boolean {
  return /^\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(pattern);
}

/**
 * Edges from each producer to each consumer whose requires meet its produces
 * (no self edges), sorted; `specificOnly`: only between specific patterns
 * (what closes a cycle).
 */
export function dependencyEdges(actions: readonly ContractAction[], specificOnly = false): DependencyEdge[] {
  const producers = actions.filter((a) => a.produces);
  const edges = new Map<string, DependencyEdge>();
  for (const consumer of actions) {
    for (const r of consumer.requires ?? []) {
      if (specificOnly && isGeneric(r.resource)) continue;
      for (const producer of producers) {
        if (producer === consumer) continue;
        const meets = (p: LoadedProduct): boolean =>
          !(specificOnly && isGeneric(p.resource)) && patternsMeet(open(r.resource), open(p.resource));
        if (!producer.produces!.some(meets)) continue;
        const edge = { from: producer.qualifiedName, to: consumer.qualifiedName, resource: r.resource };
        edges.set(`${edge.from} ${edge.to} ${edge.resource}`, edge);
      }
    }
  }
  return [...edges.values()].sort((x, y) => (x.from + x.to + x.resource < y.from + y.to + y.resource ? -1 : 1));
}

/** The cycles of the graph: its strongly connected components of two or more actions (Tarjan). */
export function dependencyCycles(edges: readonly DependencyEdge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) cycles.push(component.sort());
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return cycles;
}

/**
 * The tools to refuse for cycles in their contracts, each with its reason:
 * in each cycle, the tools not in `keep` (the bundled ones), or every tool in
 * it when all are, until no cycle is left.
 */
export function refuseCycles<T extends { name: string; actions: readonly ContractAction[] }>(
  tools: readonly T[],
  keep: (tool: T) => boolean,
): { kept: T[]; refused: { tool: T; reason: string }[] } {
  let kept = [...tools];
  const refused: { tool: T; reason: string }[] = [];
  for (;;) {
    const cycles = dependencyCycles(
      dependencyEdges(
        kept.flatMap((t) => t.actions),
        true,
      ),
    );
    if (cycles.length === 0) return { kept, refused };
    for (const cycle of cycles) {
      const inCycle = kept.filter((t) => cycle.some((q) => q.startsWith(`${t.name}/`)));
      const out = inCycle.some((t) => !keep(t)) ? inCycle.filter((t) => !keep(t)) : inCycle;
      const reason = `requires/produces contracts form a cycle (${cycle.join(', ')}): none of them could run first`;
      for (const tool of out) if (!refused.some((r) => r.tool === tool)) refused.push({ tool, reason });
    }
    kept = kept.filter((t) => !refused.some((r) => r.tool === t));
  }
}

/** The actions that produce a resource of this name (filled patterns), leaving out `except`. */
export function producersOf(actions: readonly ContractAction[], name: string, except?: string): string[] {
  return actions
    .filter((a) => a.qualifiedName !== except && a.produces?.some((p) => patternsMeet(open(p.resource), name)))
    .map((a) => a.qualifiedName);
}

// ---- Per call ----------------------------------------------------------------------

/** The names a call's requires check, each once: `withData` those whose schema needs the data. */
export function requiredNames(
  action: ContractAction,
  args: Record<string, unknown>,
): { names: string[]; withData: string[] } | undefined {
  if (!action.requires) return undefined;
  const names = new Set<string>();
  const withData = new Set<string>();
  for (const r of action.requires) {
    const name = fill(r.resource, args);
    if (name.includes(ANY)) continue;
    names.add(name);
    if (r.problem) withData.add(name);
  }
  return names.size > 0 ? { names: [...names], withData: [...withData] } : undefined;
}

/** The requirements a call does not meet, given what the decision's read found of `requiredNames`. */
export function unmetRequirements(
  action: ContractAction,
  args: Record<string, unknown>,
  found: readonly FoundResource[],
  allActions: readonly ContractAction[],
): MissingDependency[] {
  const missing: MissingDependency[] = [];
  for (const r of action.requires ?? []) {
    const name = fill(r.resource, args);
    if (name.includes(ANY) || missing.some((m) => m.resource === name)) continue;
    const resource = found.find((f) => f.name === name);
    const reason = !resource
      ? 'absent'
      : r.createdBy !== undefined && resource.createdBy !== r.createdBy
        ? 'created_by'
        : r.problem?.(resource.data) !== undefined
          ? 'schema'
          : undefined;
    if (reason)
      missing.push({ resource: name, producers: producersOf(allActions, name, action.qualifiedName), reason });
  }
  return missing;
}

/** The check a write of the call makes on its data, or undefined when its action declares no produces schema. */
export function productCheck(
  action: ContractAction,
  args: Record<string, unknown>,
): ((name: string, data: unknown) => void) | undefined {
  const checked = action.produces?.filter((p) => p.problem);
  if (!checked || checked.length === 0) return undefined;
  const filled = checked.map((p) => ({ pattern: fill(p.resource, args), product: p }));
  return (name, data) => {
    for (const { pattern, product } of filled) {
      if (!patternsMeet(pattern, name)) continue;
      const problem = product.problem!(data);
      if (problem !== undefined) {
        throw new ContractViolation(
          `${action.qualifiedName} wrote resource ${name}, which breaks its produces schema (${product.resource}): ${problem}`,
        );
      }
    }
  };
}
