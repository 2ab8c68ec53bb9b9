/**
 * The one rule for a resource's time to live (API.md, "Shared context, M6",
 * TTL): whole seconds from 1 to a year. Every way in checks it here (REST's
 * PUT, the shared context, data-tool's args), so each refuses the same values
 * with the same words (ttlSecondsOf in resource-service.ts for the shared
 * context's options); the store then trusts it.
 */
import { z } from 'zod';

/** 365 days. */
export const TTL_MAX_SECONDS = 31_536_000;

export const TTL_RULE = `must be a whole number of seconds from 1 to ${TTL_MAX_SECONDS}`;

export function isValidTtl(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= TTL_MAX_SECONDS;
}

/** The same rule as a zod schema, for action inputs (data-tool's create and update). */
export const ZTtlSeconds = z
  .number()
  .int()
  .min(1)
  .max(TTL_MAX_SECONDS)
  .describe('Seconds until the resource expires (reads as missing, then is deleted); absent: it never expires');
