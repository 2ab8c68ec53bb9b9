/**
 * The hot path of a remote call (issue 21's speed): `tools/call` on an
 * established mcp-http connection sent with undici's dispatcher API instead
 * of the SDK client. The SDK client's per-call work — zod validation of the
 * outgoing message and of the result, fetch's web streams for the body and
 * the response, a Request clone per manual-redirect request, the SSE parse
 * through TextDecoderStream and EventSourceParserStream — was most of the
 * gateway's CPU on a remote read (docs/BENCHMARKS.md §12).
 *
 * What it sends is what the SDK client sends on that connection: the
 * connection's headers, the session id and protocol version it negotiated
 * (2025-era), or the `_meta` envelope and `Mcp-Method`/`Mcp-Name` headers
 * (2026-07-28). The connection's pool is the guarded fetch's, so the
 * addresses a name resolves to are checked when a connection is made, and
 * the URL passes the same rules first. Everything else stays the SDK
 * client's: the handshake, tools/list, and any call this path leaves to it —
 * a redirect (followed by the guarded fetch, every hop checked) and a
 * 2026-07-28 result that is not complete (input_required). Failures are
 * thrown as the SDK client throws them, so mcp-errors.ts sorts both paths
 * alike (a forgotten session, HTTP errors, timeouts, JSON-RPC errors).
 *
 * A timeout or an abort cancels the call upstream as the SDK client does:
 * 2025-era, `notifications/cancelled` for the request's id; 2026-07-28, the
 * request's own stream is closed. Either way the request itself is aborted.
 */
import { type CallToolResult, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import type { Dispatcher } from 'undici';
import type { AddressCheck } from './address-rules';
import { UpstreamUnavailableError } from './upstream';
import { callResultIn, mediaType, responseIn, sseResponse } from './mcp-wire';

/** Where the direct path sends: the connection's URL and header set, on the guarded pool. */
export interface DirectRoute {
  dispatcher: Dispatcher;
  url: URL;
  /** The connection's own headers (the participant's, or an owner's). */
  headers: Record<string, string>;
  /** The address rules' URL check (the guarded fetch's); absent: the URL is not checked (no guard configured). */
  checkUrl?: (url: string) => AddressCheck;
}

/** What the SDK client negotiated on a connection, as the direct path needs it. */
export interface WireSession {
  era: 'modern' | 'legacy';
  protocolVersion: string;
  sessionId?: string;
  /** 2026-07-28: the `_meta` every request carries (protocol version, client info and capabilities). */
  envelope?: Record<string, unknown>;
}

export interface DirectCall {
  /** This request's JSON-RPC id: unique on the connection, never one the SDK client uses (those are numbers). */
  id: string;
  tool: string;
  args: Record<string, unknown>;
  signal: AbortSignal;
  timeoutMs: number;
}

/** The direct path left this call to the SDK client (nothing was done upstream). */
export const VIA_SDK = Symbol('via-sdk');

/** Whether a tool name goes into `Mcp-Name` as it is (the SDK would base64-encode anything else). */
export function plainHeaderValue(value: string): boolean {
  return value !== '' && value === value.trim() && !value.startsWith('=?base64?') && /^[\t\x20-\x7e]*$/.test(value);
}

function headersFor(route: DirectRoute, wire: WireSession, method: string, tool?: string): Record<string, string> {
  const headers: Record<string, string> = { ...route.headers };
  headers['content-type'] = 'application/json';
  headers.accept = 'application/json, text/event-stream';
  headers['mcp-protocol-version'] = wire.protocolVersion;
  if (wire.sessionId !== undefined) headers['mcp-session-id'] = wire.sessionId;
  if (wire.era === 'modern') {
    headers['mcp-method'] = method;
    if (tool !== undefined) headers['mcp-name'] = tool;
  }
  return headers;
}

function post(route: DirectRoute, headers: Record<string, string>, body: string, signal?: AbortSignal) {
  const { url } = route;
  return route.dispatcher.request({
    origin: url.origin,
    path: url.pathname + url.search,
    method: 'POST',
    headers,
    body,
    signal,
  });
}

/** 2025-era cancellation: notifications/cancelled for the request, sent and forgotten (as the SDK client does). */
function sendCancel(route: DirectRoute, wire: WireSession, id: string, reason: string): void {
  const body = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } });
  post(route, headersFor(route, wire, 'notifications/cancelled'), body).then(
    (res) => res.body.dump().catch(() => undefined),
    () => undefined,
  );
}

/** tools/call sent directly; its result, VIA_SDK, or the failure the SDK client would throw. */
export async function callDirect(
  route: DirectRoute,
  wire: WireSession,
  call: DirectCall,
): Promise<CallToolResult | typeof VIA_SDK> {
  const checked = route.checkUrl?.(route.url.href);
  if (checked && !checked.ok) throw new UpstreamUnavailableError(checked.message);
  const params: Record<string, unknown> = { name: call.tool, arguments: call.args };
  if (wire.envelope !== undefined) params._meta = wire.envelope;
  const body = JSON.stringify({ jsonrpc: '2.0', id: call.id, method: 'tools/call', params });
  const stop = new AbortController();
  let cancelled: SdkError | undefined;
  const cancel = (reason: unknown): void => {
    if (cancelled) return;
    cancelled = reason instanceof SdkError ? reason : new SdkError(SdkErrorCode.RequestTimeout, String(reason));
    if (wire.era === 'legacy') sendCancel(route, wire, call.id, cancelled.message);
    stop.abort(cancelled);
  };
  const onAbort = () => cancel(call.signal.reason);
  call.signal.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(
    () => cancel(new SdkError(SdkErrorCode.RequestTimeout, 'Request timed out', { timeout: call.timeoutMs })),
    call.timeoutMs,
  );
  try {
    return await exchange(route, { wire, call, body, signal: stop.signal });
  } catch (error) {
    throw cancelled ?? error;
  } finally {
    clearTimeout(timer);
    call.signal.removeEventListener('abort', onAbort);
  }
}

async function exchange(
  route: DirectRoute,
  sent: { wire: WireSession; call: DirectCall; body: string; signal: AbortSignal },
): Promise<CallToolResult | typeof VIA_SDK> {
  const { wire, call } = sent;
  const res = await post(route, headersFor(route, wire, 'tools/call', call.tool), sent.body, sent.signal);
  const status = res.statusCode;
  if (status >= 300 && status < 400) {
    // Redirects are the guarded fetch's to follow (every hop checked, credentials dropped across origins).
    await res.body.dump().catch(() => undefined);
    return VIA_SDK;
  }
  if (status < 200 || status >= 300) throw await httpError(res, wire, call.id);
  const type = mediaType(res.headers['content-type']);
  let message;
  if (type === 'application/json') {
    message = responseIn(JSON.parse(await res.body.text()), call.id);
  } else if (type === 'text/event-stream') {
    message = await sseResponse(res.body, call.id);
  } else {
    await res.body.dump().catch(() => undefined);
    throw new SdkError(SdkErrorCode.ClientHttpUnexpectedContent, 'Unexpected content type');
  }
  if (message === undefined) throw new SdkError(SdkErrorCode.InvalidResult, 'No response to the request');
  const result = callResultIn(message);
  return result === 'not-complete' ? VIA_SDK : result;
}

/** An HTTP error answer as the SDK client throws it: a 2026-07-28 JSON-RPC error in a 400's body, else SdkHttpError. */
async function httpError(res: Dispatcher.ResponseData, wire: WireSession, id: string): Promise<Error> {
  const text = await res.body.text().catch(() => '');
  if (res.statusCode === 400 && wire.era === 'modern') {
    let response;
    try {
      response = responseIn(JSON.parse(text), id);
    } catch {
      response = undefined;
    }
    if (response !== undefined && 'error' in response) {
      try {
        callResultIn(response);
      } catch (error) {
        return error as Error;
      }
    }
  }
  // Not the text in the message: it is the upstream's and may echo a secret (mcp-errors.ts reads data.text only).
  return new SdkHttpError(SdkErrorCode.ClientHttpNotImplemented, `Error POSTing to endpoint (HTTP ${res.statusCode})`, {
    status: res.statusCode,
    text,
  });
}
