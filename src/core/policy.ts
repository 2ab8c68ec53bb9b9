/**
 * A conversation's policy: `deny` patterns over canonical action names
 * (`tool/action`) with `*` wildcards, e.g. `data-tool/*` or `*\/delete-*`.
 * An action a pattern matches is a `contradiction` and never executes.
 */
import { z } from 'zod';

export const DENY_PATTERN_RE = /^[a-z0-9*-]{1,64}\/[a-z0-9*-]{1,64}$/;

export const ZPolicy = z.object({
  deny: z
    .array(
      z
        .string()
        .regex(DENY_PATTERN_RE, 'must be tool/action with optional * wildcards, e.g. data-tool/* or */delete-*'),
    )
    .max(256)
    .default([]),
});
export type TPolicy = z.output<typeof ZPolicy>;

/** Reads a policy back from the database: anything malformed counts as "deny nothing" plus its valid patterns. */
export function readPolicy(value: unknown): TPolicy {
  const parsed = ZPolicy.safeParse(value);
  if (parsed.success) return parsed.data;
  const deny = (value as { deny?: unknown } | null)?.deny;
  return {
    deny: Array.isArray(deny) ? deny.filter((p): p is string => typeof p === 'string' && DENY_PATTERN_RE.test(p)) : [],
  };
}

function compile(pattern: string): RegExp {
  const body = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]*');
  return new RegExp(`^${body}$`);
}

// Policies repeat across requests of one conversation: keep compiled matchers
// for the most recent ones (bounded, so hostile input cannot grow memory).
const cache = new Map<string, RegExp[]>();
const CACHE_MAX = 1000;

function matchers(deny: readonly string[]): RegExp[] {
  const key = deny.join('\n');
  let compiled = cache.get(key);
  if (!compiled) {
    compiled = deny.map(compile);
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
    cache.set(key, compiled);
  }
  return compiled;
}

/** The first deny pattern matching `tool/action`, if any. */
export function deniedBy(policy: TPolicy, qualifiedName: string): string | undefined {
  if (policy.deny.length === 0) return undefined;
  const compiled = matchers(policy.deny);
  const i = compiled.findIndex((re) => re.test(qualifiedName));
  return i >= 0 ? policy.deny[i] : undefined;
}
