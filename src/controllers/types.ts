// Types shared by the controllers, as they appear in the OpenAPI spec. (A line comment:
// tsoa reads only the first JSDoc block of a declaration, and a file header
// block would be taken as the first type's.)

/**
 * A conversation id or resource name: URL-safe, 1 to 128 of A-Z a-z 0-9 : _ -
 * @pattern ^[A-Za-z0-9:_-]+$
 * @minLength 1
 * @maxLength 128
 */
export type Id = string;

/** 1 read, 2 write, 3 execute. */
export type PermissionLevel = 1 | 2 | 3;

export type AlignmentValue = 'aligned' | 'agnostic' | 'contradiction';

/** Any JSON object. */
export type JsonObject = { [key: string]: unknown };

export type { Resource } from '../core/tool-interface';
