/**
 * A pipeline step (seed 002, pattern 2): reads a resource, applies one
 * declared transformation to its data (or to one field of it) and writes the
 * result back, or to a target resource. The transformations are pure
 * functions, exported for unit tests.
 */
import { z } from 'zod';
import {
  ToolError,
  canonicalJson,
  ZResourceName,
  ZResourceOutput,
  defineAction,
  defineTool,
  requireResource,
  type Resource,
  type ResourceEvent,
  type SharedContext,
  type ToolContext,
} from '../src/core/tool-interface';

export const TRANSFORM_OPERATIONS = [
  'uppercase',
  'lowercase',
  'trim',
  'sort',
  'reverse',
  'unique',
  'sum',
  'pick',
  'omit',
  'flatten',
] as const;
export type TransformOperation = (typeof TRANSFORM_OPERATIONS)[number];

export interface TransformOptions {
  /** Keys kept by `pick` or dropped by `omit`. */
  keys?: readonly string[] | undefined;
  /** For `sort` of an array of objects: the key to sort by. */
  by?: string | undefined;
}

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function misfit(operation: string, needs: string): ToolError {
  return new ToolError('invalid_args', `Operation "${operation}" needs ${needs}`);
}

function requireArray(data: unknown, operation: string, needs = 'an array'): unknown[] {
  if (!Array.isArray(data)) throw misfit(operation, needs);
  return data;
}

function mapStrings(data: unknown, operation: string, fn: (s: string) => string): string | string[] {
  const needs = 'a string or an array of strings';
  if (typeof data === 'string') return fn(data);
  const items = requireArray(data, operation, needs);
  return items.map((item) => {
    if (typeof item !== 'string') throw misfit(operation, needs);
    return fn(item);
  });
}

/** Sort keys must be all numbers or all strings: mixing them has no meaningful order. */
function compareAll(keys: unknown[], operation: string): (a: number, b: number) => number {
  if (keys.every((k) => typeof k === 'number')) {
    const nums = keys;
    return (a, b) => nums[a]! - nums[b]!;
  }
  if (keys.every((k) => typeof k === 'string')) {
    const strs = keys;
    // Code-unit order: the same result on every host, whatever its locale.
    return (a, b) => (strs[a]! < strs[b]! ? -1 : strs[a]! > strs[b]! ? 1 : 0);
  }
  throw misfit(operation, 'values that are all numbers or all strings');
}

function sortValues(data: unknown, by: string | undefined): unknown[] {
  const items = requireArray(data, 'sort');
  const keys = items.map((item) => {
    if (by === undefined) return item;
    if (!isObject(item) || !Object.hasOwn(item, by)) throw misfit('sort', `every item to be an object with "${by}"`);
    return item[by];
  });
  const compare = compareAll(keys, 'sort');
  // Sorting indices keeps the original items (and the sort is stable).
  return items
    .map((_, i) => i)
    .sort(compare)
    .map((i) => items[i]);
}

function reverseValue(data: unknown): unknown {
  // Spreading a string splits it by code point, so surrogate pairs survive.
  if (typeof data === 'string') return [...data].reverse().join('');
  return [...requireArray(data, 'reverse', 'an array or a string')].reverse();
}

function uniqueValues(data: unknown): unknown[] {
  const seen = new Set<string>();
  return requireArray(data, 'unique').filter((item) => {
    const key = canonicalJson(item);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function sumValues(data: unknown): number {
  const items = requireArray(data, 'sum', 'an array of numbers');
  if (!items.every((n) => typeof n === 'number')) throw misfit('sum', 'an array of numbers');
  return items.reduce((acc, n) => acc + n, 0);
}

function selectKeys(data: unknown, operation: 'pick' | 'omit', keys: readonly string[] | undefined): unknown {
  if (!keys || keys.length === 0) throw misfit(operation, 'a non-empty `keys` list');
  const wanted = new Set(keys);
  const select = (obj: JsonObject): JsonObject =>
    Object.fromEntries(Object.entries(obj).filter(([k]) => wanted.has(k) === (operation === 'pick')));
  const needs = 'an object or an array of objects';
  if (isObject(data)) return select(data);
  return requireArray(data, operation, needs).map((item) => {
    if (!isObject(item)) throw misfit(operation, needs);
    return select(item);
  });
}

/** Applies one operation to a JSON value; throws invalid_args when the value does not fit. */
export function applyTransform(operation: TransformOperation, data: unknown, options: TransformOptions = {}): unknown {
  switch (operation) {
    case 'uppercase':
      return mapStrings(data, operation, (s) => s.toUpperCase());
    case 'lowercase':
      return mapStrings(data, operation, (s) => s.toLowerCase());
    case 'trim':
      return mapStrings(data, operation, (s) => s.trim());
    case 'sort':
      return sortValues(data, options.by);
    case 'reverse':
      return reverseValue(data);
    case 'unique':
      return uniqueValues(data);
    case 'sum':
      return sumValues(data);
    case 'pick':
    case 'omit':
      return selectKeys(data, operation, options.keys);
    case 'flatten':
      return requireArray(data, operation).flat(1);
  }
}

/** `data[field]`, for a transformation that targets one field of an object. */
export function fieldOf(data: unknown, field: string): unknown {
  if (!isObject(data)) throw new ToolError('invalid_args', `"field" needs the resource data to be an object`);
  if (!Object.hasOwn(data, field)) throw new ToolError('invalid_args', `The resource data has no field "${field}"`);
  return data[field];
}

/** A copy of `data` with `field` replaced: an in-place field transform keeps the rest. */
function withField(data: unknown, field: string, value: unknown): JsonObject {
  if (!isObject(data)) throw new ToolError('invalid_args', `"field" needs the resource data to be an object`);
  return { ...data, [field]: value };
}

async function writeTarget(shared: SharedContext, target: string, data: unknown): Promise<Resource> {
  const existing = await shared.getResource(target);
  return existing ? shared.updateResource(target, data) : shared.createResource(target, data);
}

/** Every string in a JSON value uppercased, at any depth (the pipeline step the subscription runs). */
export function uppercaseDeep(data: unknown): unknown {
  if (typeof data === 'string') return data.toUpperCase();
  if (Array.isArray(data)) return data.map(uppercaseDeep);
  if (isObject(data)) return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, uppercaseDeep(v)]));
  return data;
}

/** `raw-NAME` is transformed into `transformed-NAME` (a glob of the subscription, API.md Subscriptions). */
export const RAW_PREFIX = 'raw-';
export const TRANSFORMED_PREFIX = 'transformed-';

/**
 * The pipeline step without an agent in the loop (seed 002, pattern 2): when
 * `raw-NAME` is created or updated (by data-tool or anyone), `transformed-NAME`
 * gets `{ source, sourceVersion, data }` with every string of its data
 * uppercased. Runs again after a retry or a restart (at least once): a target
 * that already reflects this version of the source is left alone. The
 * source's current data is read (locked), so an older event never overwrites a
 * newer result.
 */
async function transformRaw(event: ResourceEvent, ctx: ToolContext): Promise<void> {
  const name = event.subject.name;
  const target = TRANSFORMED_PREFIX + name.slice(RAW_PREFIX.length);
  const source = await ctx.sharedContext.getResource(name);
  if (!source) return; // deleted since: its resource.deleted event removes the target
  const existing = await ctx.sharedContext.getResource(target);
  const result = { source: name, sourceVersion: source.version, data: uppercaseDeep(source.data) };
  if (!existing) {
    await ctx.sharedContext.createResource(target, result);
    return;
  }
  const done = (existing.data as { sourceVersion?: unknown } | null)?.sourceVersion;
  if (typeof done === 'number' && done >= source.version) return;
  await ctx.sharedContext.updateResource(target, result);
}

const ZTransformArgs = z.object({
  name: ZResourceName.describe('The resource to read'),
  operation: z.enum(TRANSFORM_OPERATIONS).describe('The transformation to apply'),
  field: z.string().min(1).max(128).optional().describe('Transform only data[field] (the data must be an object)'),
  target: ZResourceName.optional().describe('Write the result to this resource instead (created if missing)'),
  keys: z.array(z.string().min(1).max(128)).max(256).optional().describe('For pick/omit: the keys to keep/drop'),
  by: z.string().min(1).max(128).optional().describe('For sort of an array of objects: the key to sort by'),
});

export default defineTool({
  name: 'transform-tool',
  version: '1.0.0',
  description: 'Transforms the data of a resource (a pipeline step) and stores the result.',
  actions: {
    'transform-resource': defineAction({
      description:
        'Read resource `name`, apply `operation` to its data and store the result. ' +
        'uppercase/lowercase/trim: a string or array of strings; sort: numbers or strings, or objects with `by`; ' +
        'reverse: array or string; unique, flatten: array; sum: array of numbers; pick/omit: object(s) with `keys`. ' +
        'With `field`, only data[field] is transformed: written back in place the rest of the data is kept, ' +
        'written to `target` the target receives the transformed value alone. Without `target` the source is updated.',
      level: 2,
      input: ZTransformArgs,
      // A pipeline step: its source comes from a producer first; it writes `target` (or the source again).
      requires: [{ resource: '{name}' }],
      produces: [{ resource: '{target}' }],
      output: z.object({
        source: z.string().describe('The resource read'),
        target: z.string().describe('The resource written (the source when transformed in place)'),
        operation: z.enum(TRANSFORM_OPERATIONS),
        resource: ZResourceOutput.describe('The resource as written'),
      }),
      handler: async ({ name, operation, field, target, keys, by }, ctx) => {
        const source = await requireResource(ctx.sharedContext, name);
        const output = applyTransform(operation, field === undefined ? source.data : fieldOf(source.data, field), {
          keys,
          by,
        });
        const inPlace = target === undefined || target === name;
        if (!inPlace) {
          const resource = await writeTarget(ctx.sharedContext, target, output);
          return { source: name, target, operation, resource };
        }
        const data = field === undefined ? output : withField(source.data, field, output);
        const resource = await ctx.sharedContext.updateResource(name, data);
        return { source: name, target: name, operation, resource };
      },
    }),
  },
  // Needs write level (2) in the conversation, like transform-resource: below it the handlers are skipped.
  on: {
    'resource.created': { names: [`${RAW_PREFIX}*`], level: 2, handler: transformRaw },
    'resource.updated': { names: [`${RAW_PREFIX}*`], level: 2, handler: transformRaw },
    'resource.deleted': {
      names: [`${RAW_PREFIX}*`],
      level: 2,
      handler: async (event, ctx) => {
        await ctx.sharedContext.deleteResource(TRANSFORMED_PREFIX + event.subject.name.slice(RAW_PREFIX.length));
      },
    },
  },
});
