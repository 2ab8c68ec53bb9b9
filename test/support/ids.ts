/** Unique names for test data, so no test meets another's (or another run's) rows. */
import { randomUUID } from 'node:crypto';

/** `prefix-` and a UUID: a valid conversation id or resource name (the prefix says which test made it). */
export function uniqueId(prefix = 'test'): string {
  return `${prefix}-${randomUUID()}`;
}
