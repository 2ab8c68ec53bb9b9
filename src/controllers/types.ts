// Types shared by the controllers, as they appear in the OpenAPI spec. (A line comment:
// tsoa reads only the first JSDoc block of a declaration, and a file header
// block would be taken as the first type's.)

// The rule is src/core/resource-names.ts; a JSDoc tag cannot import it, so
// test/unit/id-rule.test.ts checks that the spec's pattern and lengths equal it.
/**
 * A conversation id or resource name: URL-safe, 1 to 128 of A-Z a-z 0-9 : _ -
 * @pattern ^[A-Za-z0-9:_-]{1,128}$ must be 1 to 128 characters of A-Z a-z 0-9 : _ -
 * @minLength 1
 * @maxLength 128
 */
export type Id = string;

// The rule is IDEMPOTENCY_KEY_RE in src/core/idempotency.ts.
/**
 * An Idempotency-Key: 1 to 255 visible ASCII characters (no spaces).
 * @pattern ^[!-~]{1,255}$ must be 1 to 255 visible ASCII characters (no spaces)
 * @minLength 1
 * @maxLength 255
 */
export type IdempotencyKey = string;

/** 1 read, 2 write, 3 execute. */
export type PermissionLevel = 1 | 2 | 3;

export type AlignmentValue = 'aligned' | 'agnostic' | 'contradiction';

/** Any JSON object. */
export type JsonObject = { [key: string]: unknown };

export type { Resource } from '../core/tool-interface';
