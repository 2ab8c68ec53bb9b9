/**
 * A tool's subscriptions (ToolDefinition.on, API.md "Shared context, M6",
 * Subscriptions) as the registry keeps them: validated when the module
 * loads, and matched against each resource event by the runner
 * (src/core/subscriptions.ts).
 */
import { z } from 'zod';
import { isValidId } from './resource-names';
import type { Level, ResourceEvent, ResourceEventType, ResourceSubscription, ToolContext } from './tool-interface';

export const RESOURCE_EVENT_TYPES: readonly ResourceEventType[] = [
  'resource.created',
  'resource.updated',
  'resource.deleted',
  'resource.expired',
];

/** One handler of a loaded tool. */
export interface LoadedSubscription {
  type: ResourceEventType;
  /** Globs over resource names; undefined: every name. */
  names?: readonly string[];
  level: Level;
  /** `stop` aborts when the runner gives up on it (the timeout): an isolated tool's worker is then stopped. */
  handler: (event: ResourceEvent, ctx: ToolContext, stop?: AbortSignal) => unknown;
}

/** What a worker reports of its tool's subscriptions (the handler stays in the worker). */
export type SubscriptionMeta = Omit<LoadedSubscription, 'handler' | 'names'> & { names?: string[] };

/** The action name a worker runs a subscription's handler under: not a valid action name, so never an action's. */
export const handlerAction = (type: ResourceEventType): string => `on:${type}`;

/** A glob is a resource name in which `*` stands for any run of characters (none too). */
const ZGlob = z
  .string()
  .min(1)
  .refine((g) => isValidId(g.replace(/\*/g, 'x')), 'must be a resource name, with * as a wildcard');

const ZSubscription = z.object({
  names: z.array(ZGlob).optional(),
  level: z.union([z.literal(1), z.literal(2), z.literal(3)]),
  handler: z.custom<ResourceSubscription['handler']>((v) => typeof v === 'function', 'must be a function'),
});

/** ToolDefinition.on, checked (an unknown event type is refused, not ignored). */
export const ZToolSubscriptions = z.partialRecord(z.enum(RESOURCE_EVENT_TYPES), ZSubscription).optional();

export function loadSubscriptions(on: z.output<typeof ZToolSubscriptions>): LoadedSubscription[] {
  if (!on) return [];
  return RESOURCE_EVENT_TYPES.flatMap((type) => {
    const s = on[type];
    if (!s) return [];
    return [
      Object.freeze({
        type,
        ...(s.names ? { names: Object.freeze([...s.names]) } : {}),
        level: s.level,
        handler: s.handler,
      }),
    ];
  });
}

const globCache = new Map<string, RegExp>();

/** `*` matches any run of characters; everything else itself. */
export function globMatch(glob: string, name: string): boolean {
  let re = globCache.get(glob);
  if (!re) {
    re = new RegExp(
      `^${glob
        .split('*')
        .map((part) => part.replace(/[.+?^${}()|[\]\\-]/g, '\\$&'))
        .join('.*')}$`,
    );
    globCache.set(glob, re);
  }
  return re.test(name);
}

/** The subscription's handler wants an event of this resource. */
export function matchesName(s: LoadedSubscription, name: string): boolean {
  return s.names === undefined || s.names.some((g) => globMatch(g, name));
}
