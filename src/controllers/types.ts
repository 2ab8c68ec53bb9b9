/** Types shared by the controllers, as they appear in the OpenAPI spec. */

/**
 * A conversation id or resource name: URL-safe.
 * @pattern ^[A-Za-z0-9:_-]{1,128}$
 * @example "conv-42"
 */
export type Id = string;

/** 1 read, 2 write, 3 execute. */
export type PermissionLevel = 1 | 2 | 3;

export type AlignmentValue = 'aligned' | 'agnostic' | 'contradiction';

/** Any JSON object. */
export type JsonObject = { [key: string]: unknown };

export interface Resource {
  name: string;
  /** Any JSON value. */
  data: unknown;
  /** Tool name, or `client` for the REST endpoints. */
  createdBy: string;
  updatedBy: string;
  /** Epoch milliseconds. */
  createdAt: number;
  updatedAt: number;
  /** Starts at 1 and grows by 1 on each update. */
  version: number;
}
