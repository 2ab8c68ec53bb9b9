/**
 * A conversation's policy: `deny` patterns over canonical action names
 * (`tool/action`) with `*` wildcards, e.g. `data-tool/*` or `*\/delete-*`.
 * An action a pattern matches is a `contradiction` and never executes.
 */
import { z } from 'zod';

export const DENY_PATTERN_RE = /^[a-z0-9*-]{1,64}\/[a-z0-9*-]{1,64}$/;

export const ZPolicy = z.strictObject({
  deny: z
    .array(
      z
        .string()
        .regex(DENY_PATTERN_RE, 'must be tool/action with optional * wildcards, e.g. data-tool/* or */delete-*'),
    )
    .max(256),
});
export type TPolicy = z.output<typeof ZPolicy>;

/**
 * What a stored policy that does not parse becomes: every action denied. A
 * policy is a list of refusals, so reading less of it than was written would
 * allow what its author denied; denying everything is the only safe reading.
 * (Frozen and compared by identity in `deniedBy`.)
 */
export const UNREADABLE_POLICY: TPolicy = Object.freeze({ deny: Object.freeze(['*/*']) as string[] });

/** Shown instead of a pattern when the unreadable policy denies: its author's patterns are unknown. */
const UNREADABLE_REASON = 'stored policy unreadable, every action denied';

/**
 * Reads a policy back from the database (the only place that does). Anything
 * but exactly `{ deny: pattern[] }` is unreadable: the result is
 * UNREADABLE_POLICY and `problem` says why, for the caller to log.
 */
export function readStoredPolicy(value: unknown): { policy: TPolicy; problem?: string } {
  const parsed = ZPolicy.safeParse(value);
  if (parsed.success) return { policy: parsed.data };
  const problem = parsed.error.issues.map((i) => `${['policy', ...i.path].join('.')}: ${i.message}`).join('; ');
  return { policy: UNREADABLE_POLICY, problem };
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

/** The first deny pattern matching `tool/action`, if any (or why an unreadable policy denies it). */
export function deniedBy(policy: TPolicy, qualifiedName: string): string | undefined {
  if (policy === UNREADABLE_POLICY) return UNREADABLE_REASON;
  if (policy.deny.length === 0) return undefined;
  const compiled = matchers(policy.deny);
  const i = compiled.findIndex((re) => re.test(qualifiedName));
  return i >= 0 ? policy.deny[i] : undefined;
}
