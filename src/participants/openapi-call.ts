/**
 * One call of an OpenAPI operation: the args (one object, see
 * openapi-operations.ts) become a URL, headers and a JSON body; the answer
 * becomes `{ status, body }`, an error result for HTTP 4xx/5xx with a safe
 * message (the participant, the status and the operation: never the body or
 * a header).
 */
import { isRecord } from '../core/tool-module';
import {
  BodyTooLargeError,
  classifyFetchFailure,
  fetchUpstream,
  isJsonMediaType,
  readBodyLimited,
  type UpstreamRequest,
} from './openapi-http';
import type { OpenApiOperation, OperationParameter } from './openapi-operations';
import type { UpstreamCallOptions, UpstreamCallResult } from './upstream';

/** A larger answer is an error result, not a truncated body that would read as whole. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

export interface CallTarget {
  participant: string;
  /** Where the operation's path is appended (no trailing slash). */
  serverUrl: string;
  /** The participant's headers; a call's options.headers replace them. */
  headers?: Record<string, string>;
  fetch: typeof fetch;
}

export async function callOperation(
  operation: OpenApiOperation,
  args: Record<string, unknown>,
  target: CallTarget,
  options: UpstreamCallOptions,
): Promise<UpstreamCallResult> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = AbortSignal.any([options.signal, timeout]);
  const request = buildRequest(operation, args, target.serverUrl, signal);
  request.credentials = options.headers ?? target.headers;
  const { participant } = target;
  const name = operation.upstreamName;
  try {
    const response = await fetchUpstream(target.fetch, request);
    const { status } = response;
    const body = await readResponse(response).catch((err: unknown) => {
      if (err instanceof BodyTooLargeError) return TOO_LARGE;
      throw err;
    });
    if (body === TOO_LARGE) {
      const errorMessage = `Participant ${participant} answered more than ${MAX_RESPONSE_BYTES} bytes for ${name}`;
      return { output: { status, body: null }, isError: true, errorMessage };
    }
    if (status < 400) return { output: { status, body }, isError: false };
    const errorMessage = `Participant ${participant} answered HTTP ${status} for ${name}`;
    return { output: { status, body }, isError: true, errorMessage };
  } catch (err) {
    throw classifyFetchFailure(err, {
      what: name,
      participant,
      timeout,
      timeoutMs: options.timeoutMs,
      caller: options.signal,
    });
  }
}

const TOO_LARGE = Symbol('too large');

async function readResponse(response: Response): Promise<unknown> {
  const bytes = await readBodyLimited(response, MAX_RESPONSE_BYTES);
  if (bytes.length === 0) return null;
  const text = bytes.toString('utf8');
  if (!isJsonMediaType(response.headers.get('content-type'))) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The request for these args: path parameters in the path, query in the URL, headers, cookies, the JSON body. */
export function buildRequest(
  operation: OpenApiOperation,
  args: Record<string, unknown>,
  serverUrl: string,
  signal: AbortSignal,
): UpstreamRequest {
  let path = operation.path;
  const query = new URLSearchParams();
  const headers = new Headers({ accept: 'application/json' });
  const cookies: string[] = [];
  for (const p of operation.parameters) {
    const value = args[p.name];
    if (value === undefined || value === null) continue;
    if (p.in === 'path') path = path.split(`{${p.name}}`).join(pathValue(p, value));
    else if (p.in === 'query') appendQuery(query, p, value);
    else if (p.in === 'header') setHeader(headers, p.name, headerValue(p, value));
    else cookies.push(`${p.name}=${encodeURIComponent(p.asJson ? JSON.stringify(value) : plainValue(value))}`);
  }
  if (/\{[^}]+\}/.test(path)) throw new Error(`A path parameter of ${operation.upstreamName} is missing`);
  if (cookies.length > 0) headers.set('cookie', cookies.join('; '));
  const body = bodyOf(operation, args);
  if (body !== undefined) headers.set('content-type', operation.body!.mediaType);
  const search = query.toString();
  const url = `${serverUrl}${path}${search ? `?${search}` : ''}`;
  return { url, method: operation.method, headers, body, signal };
}

function bodyOf(operation: OpenApiOperation, args: Record<string, unknown>): string | undefined {
  const spec = operation.body;
  if (!spec || operation.method === 'GET' || operation.method === 'HEAD') return undefined;
  if (spec.mode === 'wrapped') return args.body === undefined ? undefined : JSON.stringify(args.body);
  const parameterNames = new Set(operation.parameters.map((p) => p.name));
  const entries = Object.entries(args).filter(([k, v]) => !parameterNames.has(k) && v !== undefined);
  if (entries.length === 0 && !spec.required) return undefined;
  return JSON.stringify(Object.fromEntries(entries));
}

/** style simple (the default), label or matrix; each value percent-encoded. */
function pathValue(p: OperationParameter, value: unknown): string {
  const encoded = p.asJson
    ? encodeURIComponent(JSON.stringify(value))
    : Array.isArray(value)
      ? value.map((v) => encodeURIComponent(plainValue(v))).join(',')
      : encodeURIComponent(plainValue(value));
  if (p.style === 'label') return `.${encoded}`;
  if (p.style === 'matrix') return `;${encodeURIComponent(p.name)}=${encoded}`;
  return encoded;
}

/**
 * form (the default, explode true): an array as repeated keys, or joined by
 * commas when explode is false; spaceDelimited / pipeDelimited join by those;
 * an object as deepObject (`name[key]=v`) when declared so, else as JSON.
 */
function appendQuery(query: URLSearchParams, p: OperationParameter, value: unknown): void {
  if (p.asJson) return query.append(p.name, JSON.stringify(value));
  if (Array.isArray(value)) {
    const items = value.map(plainValue);
    const joiner = p.style === 'spaceDelimited' ? ' ' : p.style === 'pipeDelimited' ? '|' : ',';
    const explode = p.explode ?? (p.style === undefined || p.style === 'form');
    if (explode) items.forEach((item) => query.append(p.name, item));
    else query.append(p.name, items.join(joiner));
    return;
  }
  if (isRecord(value) && p.style === 'deepObject') {
    for (const [key, inner] of Object.entries(value)) query.append(`${p.name}[${key}]`, plainValue(inner));
    return;
  }
  query.append(p.name, plainValue(value));
}

/** style simple: an array joined by commas, an object as JSON. */
function headerValue(p: OperationParameter, value: unknown): string {
  if (!p.asJson && Array.isArray(value)) return value.map(plainValue).join(',');
  return p.asJson ? JSON.stringify(value) : plainValue(value);
}

function setHeader(headers: Headers, name: string, value: string): void {
  try {
    headers.set(name, value);
  } catch {
    throw new Error(`The argument "${name}" is not a valid HTTP header value`);
  }
}

/** Strings, numbers and booleans as text; anything else (objects, arrays inside arrays) as JSON. */
function plainValue(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value);
}
