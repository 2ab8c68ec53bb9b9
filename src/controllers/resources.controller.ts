import {
  Body,
  Controller,
  Delete,
  Example,
  Get,
  Header,
  Path,
  Put,
  Query,
  Request,
  Response,
  Route,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import type { Request as ExRequest } from 'express';
import { isValidId } from '../core/resource-names';
import { principalOf } from '../http/authenticate';
import { parsePrecondition } from '../http/preconditions';
import { AppError, type Problem } from '../http/problem';
import type { Services } from '../services';
import type { ResourcePage } from './responses';
import type { Cursor, EntityTags, Id, Resource } from './types';
import { PROBLEM_JSON } from '../http/problem';
import {
  forbiddenExample,
  payloadTooLargeExample,
  preconditionFailedExample,
  resourceNotFoundExample,
  unauthorizedExample,
  unsupportedMediaTypeExample,
  validationFailedExample,
} from './examples/problems';
import { resourceExample, resourcePageExample } from './examples/resources';

export interface PutResourceBody {
  /**
   * Any JSON value the database can store (no NUL character or lone surrogate
   * in its strings or keys, no `__proto__` key, nesting at most 64 levels); its
   * JSON text must fit RESOURCE_MAX_BYTES.
   */
  data: unknown;
  /**
   * Seconds until the resource expires (`expiresAt`, by the database's clock):
   * from then on it reads as missing, and it is deleted within 60 s (event
   * `resource.expired`). Absent: the resource does not expire (a previous
   * expiry is cleared).
   * @isInt must be an integer from 1 to 31536000
   * @minimum 1 must be an integer from 1 to 31536000
   * @maximum 31536000 must be an integer from 1 to 31536000
   */
  ttlSeconds?: number;
}

function etag(version: number): string {
  return `"${version}"`;
}

function encodeCursor(name: string): string {
  return Buffer.from(name, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string {
  const name = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!isValidId(name) || encodeCursor(name) !== cursor) {
    throw new AppError('validation_failed', 'cursor is not one this API returned', [
      { path: 'cursor', message: 'invalid cursor' },
    ]);
  }
  return name;
}

@Route('conversations/{id}/resources')
@Tags('Resources')
export class ResourcesController extends Controller {
  constructor(private readonly services: Services) {
    super();
  }

  /**
   * The conversation's resources, ordered by name.
   * @param prefix Only names starting with this.
   * @param createdBy Only resources created by this tool (or `client`).
   * @param limit Page size, 1 to 500.
   * @isInt limit must be an integer from 1 to 500
   * @minimum limit 1 must be an integer from 1 to 500
   * @maximum limit 500 must be an integer from 1 to 500
   * @param cursor From the previous page's nextCursor.
   * @summary List the conversation's resources
   */
  @Get()
  @Example<ResourcePage>(resourcePageExample)
  @Response<Problem>(
    400,
    'Bad limit, cursor or id; a NUL character in a query value',
    validationFailedExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(404, 'No such conversation, or one the caller may not see', resourceNotFoundExample, PROBLEM_JSON)
  public async listResources(
    @Request() req: ExRequest,
    @Path() id: Id,
    @Query() prefix?: string,
    @Query() createdBy?: string,
    @Query() limit: number = 100,
    @Query() cursor?: Cursor,
  ): Promise<ResourcePage> {
    const after = cursor !== undefined ? decodeCursor(cursor) : undefined;
    const rows = await this.services.resources.listAs(principalOf(req), id, {
      prefix,
      createdBy,
      after,
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    const more = rows.length > limit;
    return { resources: page, nextCursor: more ? encodeCursor(page[page.length - 1]!.name) : null };
  }

  /**
   * One resource, with `ETag: "VERSION"`.
   * @summary Read a resource
   */
  @Get('{name}')
  @Example<Resource>(resourceExample)
  @Response<Problem>(
    400,
    'Malformed URL: bad percent-encoding, a NUL character or an invalid id',
    validationFailedExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'An agent may only read resources', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such resource, or a conversation the caller may not see',
    resourceNotFoundExample,
    PROBLEM_JSON,
  )
  public async getResource(@Request() req: ExRequest, @Path() id: Id, @Path() name: Id): Promise<Resource> {
    const resource = await this.services.resources.getAs(principalOf(req), id, name);
    this.setHeader('ETag', etag(resource.version));
    return resource;
  }

  /**
   * Creates (201) or replaces (200) a resource, as `client`. The conversation
   * is created on first use. Conditional writes follow RFC 9110 §13.1 (the
   * ETag is `"VERSION"`): `If-Match: "3"` writes only at version 3 (`*`: only
   * if it exists; a weak tag matches nothing); `If-None-Match: "3"` writes
   * unless it is at version 3 (`W/"3"` too), `*` only if it does not exist
   * (create-only). Each takes a list of tags; with both, both must hold.
   * Otherwise 412 and nothing is written. With `ttlSeconds` the resource
   * expires that many seconds after this write (`expiresAt`); without, it
   * never does. An expired resource is missing to the preconditions too.
   * @summary Create or replace a resource
   * @example body {"data": {"text": "hello"}}
   */
  @Put('{name}')
  @Example<Resource>(resourceExample)
  @SuccessResponse(200, 'Updated')
  @Response<Resource>(201, 'Created')
  @Response<Problem>(
    400,
    'Invalid body, or an If-Match / If-None-Match that is neither * nor entity tags; NUL, lone surrogates or nesting over 64 levels',
    validationFailedExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(403, 'An agent may only read resources', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'A conversation the caller may not see, or one deleted while the write ran',
    resourceNotFoundExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(
    412,
    'If-Match or If-None-Match failed: If-Match names no current version, or If-None-Match names the current one (`*`: it exists)',
    preconditionFailedExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(413, 'data is larger than RESOURCE_MAX_BYTES', payloadTooLargeExample, PROBLEM_JSON)
  @Response<Problem>(
    415,
    'Body not JSON, or an unsupported Content-Encoding or charset',
    unsupportedMediaTypeExample,
    PROBLEM_JSON,
  )
  public async putResource(
    @Request() req: ExRequest,
    @Path() id: Id,
    @Path() name: Id,
    @Body() body: PutResourceBody,
    @Header('If-Match') ifMatch?: EntityTags,
    @Header('If-None-Match') ifNoneMatch?: EntityTags,
  ): Promise<Resource> {
    // The data's refusals (413, 400) come before the headers' (400).
    const json = this.services.resources.encode(body.data);
    const match = parsePrecondition(ifMatch, 'If-Match');
    const noneMatch = parsePrecondition(ifNoneMatch, 'If-None-Match');
    const { resource, created } = await this.services.resources.putAs(principalOf(req), {
      conversationId: id,
      name,
      json,
      ...(match ? { match } : {}),
      ...(noneMatch ? { noneMatch } : {}),
      ...(body.ttlSeconds !== undefined ? { ttlSeconds: body.ttlSeconds } : {}),
      requestId: req.id ?? '-',
    });
    this.setStatus(created ? 201 : 200);
    this.setHeader('ETag', etag(resource.version));
    return resource;
  }

  /**
   * Deletes a resource. `If-Match: "VERSION"` (or a list of tags; `*`: any
   * version) makes it conditional: 412 when no listed tag is the current version.
   * @summary Delete a resource
   */
  @Delete('{name}')
  @SuccessResponse(204, 'Deleted')
  @Response<Problem>(400, 'Malformed URL or If-Match header', validationFailedExample, PROBLEM_JSON)
  @Response<Problem>(401, 'No valid bearer token', unauthorizedExample, PROBLEM_JSON)
  @Response<Problem>(403, 'An agent may only read resources', forbiddenExample, PROBLEM_JSON)
  @Response<Problem>(
    404,
    'No such resource, or a conversation the caller may not see',
    resourceNotFoundExample,
    PROBLEM_JSON,
  )
  @Response<Problem>(412, 'If-Match failed', preconditionFailedExample, PROBLEM_JSON)
  public async deleteResource(
    @Request() req: ExRequest,
    @Path() id: Id,
    @Path() name: Id,
    @Header('If-Match') ifMatch?: EntityTags,
  ): Promise<void> {
    const match = parsePrecondition(ifMatch, 'If-Match');
    await this.services.resources.removeAs(principalOf(req), id, name, match);
    this.setStatus(204);
  }
}
