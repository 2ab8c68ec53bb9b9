/**
 * The one rule for conversation ids and resource names (API.md
 * "Conventions"): URL-safe, as the seed's best practices ask, so either fits
 * a path segment unescaped and is a single ordinary directory name (no "/",
 * ".", NUL), which the export tool relies on.
 *
 * tsoa's `@pattern` on `Id` (src/controllers/types.ts) cannot import this;
 * test/unit/id-rule.test.ts keeps the generated spec equal to it.
 */

/** Long enough for a UUID with a prefix; short enough to index and to log. */
export const ID_MAX_LENGTH = 128;

const ID_CHARS = 'A-Za-z0-9:_-';
const ID_CHARS_TEXT = 'A-Z, a-z, 0-9, ":", "_" or "-"';

export const ID_PATTERN = new RegExp(`^[${ID_CHARS}]{1,${ID_MAX_LENGTH}}$`);

/** What a violation is told, after the field's name. */
export const ID_RULE = `must be 1 to ${ID_MAX_LENGTH} characters of ${ID_CHARS_TEXT}`;

/** A prefix filter over names: the same alphabet, possibly empty. */
export const ID_PREFIX_PATTERN = new RegExp(`^[${ID_CHARS}]{0,${ID_MAX_LENGTH}}$`);
export const ID_PREFIX_RULE = `must be at most ${ID_MAX_LENGTH} characters of ${ID_CHARS_TEXT}`;

export function isValidId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value);
}
