/**
 * The OpenAPI transport's errors, and what it needs around `fetch`: reading a body with a
 * ceiling, telling JSON media types apart, and sorting a failed request into
 * "cannot be reached" (503 participant_unavailable), "took too long"
 * (UpstreamTimeoutError) or "the caller cancelled". The messages name the
 * participant and the operation only: never a URL's query, a header or a body.
 */
import { UpstreamTimeoutError, UpstreamUnavailableError } from './upstream';

/** The document is not one we can use; the message is safe to show (the service answers 400 validation_failed). */
export class OpenApiDocumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OpenApiDocumentError';
  }
}

/** A body past the ceiling: the read stopped and the connection was let go. */
export class BodyTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`body larger than ${limitBytes} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

/** `application/json`, `application/problem+json`, `text/json`; parameters (charset) ignored. */
export function isJsonMediaType(contentType: string | null | undefined): boolean {
  if (!contentType) return false;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return /^(application|text)\/([\w.!#$&^-]+\+)?json$/.test(type);
}

/** Reads the whole body, stopping (and cancelling the stream) once it passes `limitBytes`. */
export async function readBodyLimited(response: Response, limitBytes: number): Promise<Buffer> {
  if (!response.body) return Buffer.alloc(0);
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > limitBytes) {
    await response.body.cancel().catch(() => undefined);
    throw new BodyTooLargeError(limitBytes);
  }
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limitBytes) {
      await reader.cancel().catch(() => undefined);
      throw new BodyTooLargeError(limitBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

export interface FailureContext {
  /** What was being done, for the message: "GET /pets (listPets)" or "loading its OpenAPI document". */
  what: string;
  participant: string;
  /** Fires when the transport's own timeout passes. */
  timeout: AbortSignal;
  timeoutMs: number;
  /** The caller's signal: aborted for its own reasons means cancelled. */
  caller?: AbortSignal;
}

/**
 * Sorts an error thrown by fetch (or by reading its body) into what the
 * service needs to tell apart. A timeout (ours, or the caller's when its
 * reason is a TimeoutError) → UpstreamTimeoutError; the caller's abort for
 * another reason → that reason, as given; anything else fetch throws is the
 * network (refused, reset, DNS, an address the guarded fetch refused) →
 * UpstreamUnavailableError.
 */
export function classifyFetchFailure(err: unknown, ctx: FailureContext): Error {
  const callerReason: unknown = ctx.caller?.aborted ? ctx.caller.reason : undefined;
  const callerTimedOut = callerReason instanceof Error && callerReason.name === 'TimeoutError';
  if (ctx.timeout.aborted || callerTimedOut) {
    return new UpstreamTimeoutError(
      `Participant ${ctx.participant} did not answer ${ctx.what} within ${ctx.timeoutMs} ms`,
      { cause: err },
    );
  }
  if (ctx.caller?.aborted) {
    return callerReason instanceof Error ? callerReason : new Error(`Call to participant ${ctx.participant} cancelled`);
  }
  return new UpstreamUnavailableError(`Participant ${ctx.participant} cannot be reached (${ctx.what})`, {
    cause: err,
  });
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Fetch's own default is 20; an API that redirects more than a few times is misconfigured. */
export const MAX_REDIRECTS = 5;

export interface UpstreamRequest {
  url: string;
  method: string;
  /** Headers that may follow the request anywhere (accept, content-type, the operation's header parameters). */
  headers: Headers;
  /** The participant's (or the owner's) headers: secrets, sent only to the origin the request started at. */
  credentials?: Record<string, string>;
  body?: string;
  signal: AbortSignal;
}

/**
 * fetch, following redirects itself so that the participant's secret headers
 * never reach another origin (a plain fetch would forward all but
 * Authorization), and so that each hop goes through the given fetch again.
 * The service's guarded fetch (address-rules.ts) follows redirects on its own
 * with the same rule, so behind it this loop sees no 3xx; it is what keeps the
 * secrets home when the connector is given a plain fetch. 303, and 301/302
 * after a POST, continue as GET without a body, as browsers do.
 */
export async function fetchUpstream(fetchFn: typeof fetch, request: UpstreamRequest): Promise<Response> {
  const origin = new URL(request.url).origin;
  let { url, method, body } = request;
  for (let hop = 0; ; hop++) {
    const headers = new Headers(request.headers);
    if (body === undefined) headers.delete('content-type');
    if (new URL(url).origin === origin) addCredentials(headers, request.credentials);
    const response = await fetchFn(url, { method, headers, body, signal: request.signal, redirect: 'manual' });
    const location = response.headers.get('location');
    if (!REDIRECT_STATUSES.has(response.status) || !location || hop >= MAX_REDIRECTS) return response;
    await response.body?.cancel().catch(() => undefined);
    url = new URL(location, url).href;
    if (response.status === 303 || (response.status <= 302 && method === 'POST')) {
      method = 'GET';
      body = undefined;
    }
  }
}

function addCredentials(headers: Headers, credentials: Record<string, string> | undefined): void {
  for (const [name, value] of Object.entries(credentials ?? {})) {
    const cookies = name.toLowerCase() === 'cookie' ? headers.get('cookie') : null;
    headers.set(name, cookies ? `${value}; ${cookies}` : value);
  }
}
