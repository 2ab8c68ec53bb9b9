/**
 * The one rule for a resource's time to live (API.md, "Shared context, M6",
 * TTL): whole seconds from 1 to a year. Every way in refuses the same values
 * with the same words: the shared context's options (ttlSecondsOf in
 * resource-service.ts), action args (ZTtlSeconds: data-tool's create and
 * update) and REST's PUT (tsoa's JSDoc tags on its body, which cannot import
 * this; test/unit/ttl-rule.test.ts holds them equal). The store then trusts it.
 */
import { z } from 'zod';

/** 365 days. */
export const TTL_MAX_SECONDS = 31_536_000;

/** What a refusal says after the field's name (tsoa's JSDoc on PUT's body says it too: test/unit/ttl-rule.test.ts). */
export const TTL_RULE = `must be an integer from 1 to ${TTL_MAX_SECONDS}`;

export function isValidTtl(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= TTL_MAX_SECONDS;
}

/** The same rule as a zod schema, for action inputs (data-tool's create and update). */
export const ZTtlSeconds = z
  .number({ error: TTL_RULE })
  .int({ error: TTL_RULE })
  .min(1, { error: TTL_RULE })
  .max(TTL_MAX_SECONDS, { error: TTL_RULE })
  .describe('Seconds until the resource expires (reads as missing, then is deleted); absent: it never expires');
