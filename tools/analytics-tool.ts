/**
 * Read-only summaries of resources (seed 002, pattern 1: the consumer). Every
 * action is level 1, so analytics never needs a permission upgrade. The
 * summary functions are pure and exported for unit tests.
 */
import { z } from 'zod';
import {
  ToolError,
  type Resource,
  type SharedContext,
  ZResourceName,
  ZResourcePrefix,
  defineAction,
  defineTool,
  requireResource,
} from '../src/core/tool-interface';

export type JsonType = 'array' | 'object' | 'string' | 'number' | 'boolean' | 'null';

export interface NumericStats {
  count: number;
  min: number;
  max: number;
  mean: number;
  sum: number;
}

export interface Summary {
  type: JsonType;
  /** Items of an array, keys of an object, characters of a string. */
  size?: number;
  /** For arrays: how many items of each JSON type. */
  itemTypes?: Partial<Record<JsonType, number>>;
  /** For objects: their keys, sorted. */
  keys?: string[];
  /** The field the numbers were taken from, when one was asked for. */
  field?: string;
  /** For an array of objects and a field: how many items have that field. */
  fieldCount?: number;
  /** Over the numeric values; absent when there are none. */
  stats?: NumericStats;
}

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function jsonType(value: unknown): JsonType {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  const t = typeof value;
  return t === 'string' || t === 'number' || t === 'boolean' ? t : 'object';
}

/** count, min, max, mean and sum of the numbers among `values` (others are ignored); undefined if none. */
export function numericStats(values: readonly unknown[]): NumericStats | undefined {
  const numbers = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  if (numbers.length === 0) return undefined;
  const sum = numbers.reduce((acc, n) => acc + n, 0);
  // Math.min(...numbers) would overflow the call stack on very large arrays.
  const min = numbers.reduce((acc, n) => (n < acc ? n : acc));
  const max = numbers.reduce((acc, n) => (n > acc ? n : acc));
  return { count: numbers.length, min, max, mean: sum / numbers.length, sum };
}

function countTypes(items: readonly unknown[]): Partial<Record<JsonType, number>> {
  const counts: Partial<Record<JsonType, number>> = {};
  for (const item of items) {
    const t = jsonType(item);
    counts[t] = (counts[t] ?? 0) + 1;
  }
  return counts;
}

function withStats(summary: Summary, stats: NumericStats | undefined): Summary {
  return stats ? { ...summary, stats } : summary;
}

function summarizeValue(data: unknown): Summary {
  const type = jsonType(data);
  if (Array.isArray(data))
    return withStats({ type, size: data.length, itemTypes: countTypes(data) }, numericStats(data));
  if (isObject(data)) {
    const keys = Object.keys(data).sort();
    return { type, size: keys.length, keys };
  }
  if (typeof data === 'string') return { type, size: data.length };
  return { type };
}

/** The numbers of `field` across an array of objects. */
function summarizeField(items: readonly unknown[], field: string): Summary {
  const values = items
    .filter(isObject)
    .filter((item) => Object.hasOwn(item, field))
    .map((item) => item[field]);
  const base: Summary = {
    type: 'array',
    size: items.length,
    itemTypes: countTypes(items),
    field,
    fieldCount: values.length,
  };
  return withStats(base, numericStats(values));
}

/**
 * Without `field`, the data itself. With `field`: for an array, the values of
 * that field across its objects; for an object, its member `field`.
 */
export function summarize(data: unknown, field?: string): Summary {
  if (field === undefined) return summarizeValue(data);
  if (Array.isArray(data)) return summarizeField(data, field);
  if (isObject(data)) {
    if (!Object.hasOwn(data, field)) throw new ToolError('invalid_args', `The resource data has no field "${field}"`);
    return { ...summarizeValue(data[field]), field };
  }
  throw new ToolError('invalid_args', '"field" needs the resource data to be an object or an array of objects');
}

/** Every resource matching `filter` (and `prefix`), a page of 500 at a time: the query is the database's. */
async function* matching(shared: SharedContext, filter: string, prefix: string | undefined): AsyncGenerator<Resource> {
  let cursor: string | undefined;
  do {
    const page = await shared.queryResources({
      filter,
      limit: 500,
      ...(prefix ? { prefix } : {}),
      ...(cursor ? { cursor } : {}),
    });
    yield* page.resources;
    cursor = page.nextCursor ?? undefined;
  } while (cursor !== undefined);
}

/** How many resources match, and with `field` the numbers of that member of their data (objects only). */
export async function countMatching(
  shared: SharedContext,
  args: { prefix?: string | undefined; filter?: string | undefined; field?: string | undefined },
): Promise<{ count: number; field?: string; fieldCount?: number; stats?: NumericStats }> {
  const { prefix, filter, field } = args;
  const resources: Resource[] = [];
  if (filter === undefined) resources.push(...(await shared.listResources({ prefix })));
  else for await (const r of matching(shared, filter, prefix)) resources.push(r);
  if (field === undefined) return { count: resources.length };
  const values = resources
    .map((r) => r.data)
    .filter(isObject)
    .filter((data) => Object.hasOwn(data, field))
    .map((data) => data[field]);
  const stats = numericStats(values);
  return { count: resources.length, field, fieldCount: values.length, ...(stats ? { stats } : {}) };
}

const ZJsonType = z.enum(['array', 'object', 'string', 'number', 'boolean', 'null']);

/** Summary, as published output. */
const ZStats = z
  .object({ count: z.number().int(), min: z.number(), max: z.number(), mean: z.number(), sum: z.number() })
  .describe('Over the numeric values; absent when there are none');

const ZSummary = z.object({
  name: z.string().describe('The resource summarized'),
  type: ZJsonType,
  size: z.number().int().optional().describe('Items of an array, keys of an object, characters of a string'),
  itemTypes: z.partialRecord(ZJsonType, z.number().int()).optional().describe('For arrays: items of each JSON type'),
  keys: z.array(z.string()).optional().describe('For objects: their keys, sorted'),
  field: z.string().optional().describe('The field the numbers were taken from'),
  fieldCount: z.number().int().optional().describe('For an array of objects and a field: items with that field'),
  stats: z
    .object({ count: z.number().int(), min: z.number(), max: z.number(), mean: z.number(), sum: z.number() })
    .optional()
    .describe('Over the numeric values; absent when there are none'),
});

export default defineTool({
  name: 'analytics-tool',
  version: '1.0.0',
  description: 'Read-only summaries and statistics of resources in the shared context.',
  actions: {
    'summarize-resource': defineAction({
      description:
        'Summarize resource `name`: its JSON type and size (items, keys or characters), item types of an array, ' +
        'and count/min/max/mean/sum of its numbers. With `field`: the numbers of that field across an array of ' +
        'objects, or the member `field` of an object.',
      level: 1,
      input: z.object({
        name: ZResourceName,
        field: z.string().min(1).max(128).optional().describe('Field to take the numbers from'),
      }),
      output: ZSummary,
      // The consumer of seed 002's pattern 1; checked from the same read as the prefetch.
      requires: [{ resource: '{name}' }],
      prefetch: ({ name }) => name,
      handler: async ({ name, field }, ctx) => {
        const resource = await requireResource(ctx.sharedContext, name);
        return { name, ...summarize(resource.data, field) };
      },
    }),
    'count-resources': defineAction({
      description:
        'Count the resources of the conversation, optionally only those whose name starts with `prefix` and whose ' +
        'data matches `filter`, a SQL/JSON path predicate such as `$.status == "open" && $.amount > 100`. With ' +
        "`field`: also count/min/max/mean/sum of the numbers in that member of the counted resources' data.",
      level: 1,
      input: z.object({
        prefix: ZResourcePrefix.optional(),
        filter: z.string().min(1).max(4096).optional().describe("SQL/JSON path predicate over each resource's data"),
        field: z.string().min(1).max(128).optional().describe('Data member to take the numbers from'),
      }),
      output: z.object({
        count: z.number().int(),
        field: z.string().optional().describe('The member the numbers were taken from'),
        fieldCount: z.number().int().optional().describe('Counted resources whose data has that member'),
        stats: ZStats.optional(),
      }),
      handler: async (args, ctx) => countMatching(ctx.sharedContext, args),
    }),
  },
});
