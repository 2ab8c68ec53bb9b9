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

/**
 * Any JSON object the database can store: no string in it (key or value)
 * holds a NUL character or a lone UTF-16 surrogate, no key is `__proto__`,
 * and it nests at most 64 levels deep (a 400 otherwise).
 */
export type JsonObject = { [key: string]: unknown };

/**
 * A tool's name. Registered names are kebab-case, at most 31 characters
 * (GET /tools lists them); any other value names no tool (404).
 * @minLength 1
 */
export type ToolName = string;

/**
 * A key's id (`key_…`, from POST /keys or GET /keys); any other value names no key (404).
 * @minLength 1
 */
export type KeyId = string;

// The encoding is base64url of an Id (resources.controller.ts, conversations.controller.ts).
/**
 * A page cursor: a previous page's nextCursor, passed back unchanged. Any
 * other value, even of this form, is a 400.
 * @pattern ^[A-Za-z0-9_-]{2,171}$ is not a cursor this API returned
 */
export type Cursor = string;

/**
 * A resource page's cursor: a previous page's nextCursor, passed back
 * unchanged with the same `sort`. Any other value, even of this form, is a 400.
 * @pattern ^[A-Za-z0-9_-]{2,256}$ is not a cursor this API returned
 */
export type ResourceCursor = string;

/** A resource sort key, `-` first for descending; ties are broken by name in the same direction. */
export type ResourceSortParam = 'name' | '-name' | 'updatedAt' | '-updatedAt' | 'createdAt' | '-createdAt';

export type { Resource } from '../core/tool-interface';

// The grammar parsePrecondition in src/http/preconditions.ts reads.
/**
 * `*`, or a comma-separated list of entity tags (`"3"`, `W/"3"`; RFC 9110 §8.8.3).
 * This API's entity tags are resource versions: a well-formed tag that is no
 * version matches nothing.
 * @pattern ^[\t\x20]*(?:\*|(?:W\/)?"[\x21\x23-\x7e\x80-\xff]*"(?:[\t\x20]*,[\t\x20]*(?:W\/)?"[\x21\x23-\x7e\x80-\xff]*")*)[\t\x20]*$ must be * or entity tags such as "3"
 * @maxLength 4096
 */
export type EntityTags = string;

/**
 * The id of the last event received (an SSE Last-Event-ID): a non-negative integer.
 * @pattern ^[0-9]{1,16}$ must be the id of an event this API sent (a non-negative integer)
 */
export type EventId = string;
