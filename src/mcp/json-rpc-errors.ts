/**
 * The JSON-RPC errors the MCP endpoint answers itself, where the SDK does
 * not: transport-level refusals, params this endpoint reads, and bodies
 * express could not parse.
 */
import type { ErrorRequestHandler, Response } from 'express';
import { AppError } from '../core/errors';

/** A JSON-RPC error response without id, as the SDK answers transport-level errors. */
export function rpcError(
  res: Response,
  status: number,
  code: number,
  message: string,
  id: string | number | null = null,
): void {
  res.status(status).json({ jsonrpc: '2.0', error: { code, message }, id });
}

export function messageId(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | undefined)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** What is wrong with the params of a request this endpoint serves, as far as their types go. */
export function invalidParams(message: { method?: unknown; params?: unknown } | undefined): string | undefined {
  const params = message?.params as Record<string, unknown> | undefined;
  switch (message?.method) {
    case 'resources/read':
      return typeof params?.uri === 'string' ? undefined : 'resources/read needs params.uri, a string';
    case 'resources/list':
      return params?.cursor === undefined || typeof params.cursor === 'string'
        ? undefined
        : 'resources/list: params.cursor must be a string';
    default:
      return undefined;
  }
}

/**
 * A body express could not take (the app parses JSON before routing): the
 * JSON-RPC error a Streamable HTTP client understands, instead of the REST
 * endpoints' problem+json. Bodies of other media types are not parsed by
 * express at all; the SDK answers those with 415. Mount it on the app at
 * MCP_PATH, after the router: express skips routers while an error is pending.
 */
export const mcpBodyErrors: ErrorRequestHandler = (err: unknown, _req, res, next) => {
  if (res.headersSent) return next(err);
  const type = (err as { type?: unknown }).type;
  if (type === 'entity.parse.failed')
    return rpcError(res, 400, -32700, 'Parse error: the request body is not valid JSON');
  if (type === 'entity.too.large') return rpcError(res, 413, -32600, 'Invalid Request: the request body is too large');
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
    return rpcError(res, 415, -32000, 'Unsupported Media Type: the body must be UTF-8 JSON');
  }
  // Not valid UTF-8, or a Content-Encoding that does not decode: not JSON either. (An aborted body has
  // nobody to answer: the app's handler drops it.)
  const status = (err as { status?: unknown }).status;
  const unreadable = typeof status === 'number' && status >= 400 && status < 500 && typeof type === 'string';
  if (type === 'encoding.invalid' || (unreadable && type !== 'request.aborted')) {
    return rpcError(res, 400, -32700, 'Parse error: the request body could not be read as UTF-8 JSON');
  }
  if (err instanceof AppError && err.code === 'validation_failed') {
    // checkJsonBody: what the database cannot store (NUL, lone surrogates, __proto__ keys, deep nesting).
    return rpcError(res, 400, -32602, `Invalid params: ${err.message}`);
  }
  return next(err);
};
