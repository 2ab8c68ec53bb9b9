/**
 * What went wrong with an MCP upstream, sorted into what the participant
 * service does about it, with messages that are safe to answer, log and
 * audit: an upstream may echo the headers it received (or a child its
 * environment) in any text it sends back, and the SDK's own error messages
 * carry the upstream's response body. So no message here ever includes an
 * SDK message or an error cause as is; upstream text is only ever included
 * after redaction of every secret value the participant sends.
 */
import { ProtocolError, ProtocolErrorCode, SdkError, SdkErrorCode, SdkHttpError } from '@modelcontextprotocol/client';
import { type Redactor, truncate } from './redaction';
import { UpstreamUnavailableError } from './upstream';

/** The failure codes Node and undici give (network, spawn), in words; nothing else of a cause is ever shown. */
const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection reset',
  ENOTFOUND: 'name not resolved',
  EAI_AGAIN: 'name not resolved',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection reset',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_HEADERS_TIMEOUT: 'no answer',
  // A stdio child that could not be spawned.
  ENOENT: 'command not found',
  EACCES: 'command not executable',
};

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  let e: unknown = error;
  while (e !== undefined && e !== null && chain.length < 8) {
    chain.push(e);
    // Not `instanceof Error`: undici's errors may come from another realm (jest's vm contexts).
    e = typeof e === 'object' ? (e as { cause?: unknown }).cause : undefined;
  }
  return chain;
}

function networkReason(error: unknown): string | undefined {
  for (const e of causes(error)) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_REASONS[code]) return NETWORK_REASONS[code];
  }
  return undefined;
}

export type McpFailure =
  | { kind: 'timeout' }
  | { kind: 'session-lost' }
  | { kind: 'rpc'; code: number; message: string }
  | { kind: 'http'; status: number }
  | { kind: 'unavailable'; reason: string; error?: UpstreamUnavailableError };

function httpErrorOf(error: unknown): SdkHttpError | undefined {
  for (const e of causes(error)) if (e instanceof SdkHttpError) return e;
  return undefined;
}

/**
 * The upstream no longer knows the session the request carried: 404 (the
 * spec's answer), or 400 naming the session, which is what SDK 1.x servers
 * (server-everything among them) answer for a session they forgot, e.g. after
 * a restart. Any other 400 is the upstream refusing the request itself.
 */
function isSessionLost(http: SdkHttpError): boolean {
  if (http.status === 404) return true;
  const text = http.data.text;
  return http.status === 400 && typeof text === 'string' && /session/i.test(text);
}

const NOT_MCP_CODES: ReadonlySet<string> = new Set([
  SdkErrorCode.ClientHttpUnexpectedContent,
  SdkErrorCode.InvalidResult,
  SdkErrorCode.UnsupportedResultType,
]);

/** Sorts an error of the SDK (or of fetch, or of a guarded fetch) thrown by a request. */
export function classify(error: unknown, hadSession: boolean): McpFailure {
  const refused = causes(error).find((e) => e instanceof UpstreamUnavailableError);
  if (refused) return { kind: 'unavailable', reason: refused.message, error: refused };
  if (error instanceof SdkError && error.code === SdkErrorCode.RequestTimeout) return { kind: 'timeout' };
  if (error instanceof ProtocolError) return { kind: 'rpc', code: error.code, message: error.message };
  const http = httpErrorOf(error);
  const status = http?.status;
  if (http && hadSession && isSessionLost(http)) return { kind: 'session-lost' };
  if (status !== undefined && status >= 400 && status < 500 && status !== 404 && status !== 408) {
    return { kind: 'http', status };
  }
  if (status !== undefined) return { kind: 'unavailable', reason: `answered HTTP ${status}` };
  const network = networkReason(error);
  if (network) return { kind: 'unavailable', reason: network };
  if (
    (error as Error | undefined)?.name === 'SyntaxError' ||
    (error instanceof SdkError && NOT_MCP_CODES.has(error.code))
  ) {
    return { kind: 'unavailable', reason: 'answered with something that is not MCP' };
  }
  if (error instanceof SdkError && error.code === SdkErrorCode.ConnectionClosed) {
    return { kind: 'unavailable', reason: 'connection closed' };
  }
  return { kind: 'unavailable', reason: 'not reachable' };
}

/** The safe exception for an upstream that cannot be reached. */
export function unavailable(participant: string, reason: string): UpstreamUnavailableError {
  return new UpstreamUnavailableError(`Participant ${participant} is unavailable: ${reason}`);
}

const RPC_WORDS: Record<number, string> = {
  [ProtocolErrorCode.InvalidParams]: 'rejected the arguments',
  [ProtocolErrorCode.MethodNotFound]: 'is not known upstream',
  [ProtocolErrorCode.InvalidRequest]: 'rejected the request',
  [ProtocolErrorCode.InternalError]: 'failed upstream',
};

/** A JSON-RPC error answer to tools/call, as a safe message. */
export function rpcErrorMessage(
  where: { participant: string; tool: string; redact: Redactor },
  code: number,
  text: string,
): string {
  const words = RPC_WORDS[code] ?? 'returned a protocol error';
  const detail = truncate(where.redact(text), 500);
  return `Participant ${where.participant}'s tool ${where.tool} ${words} (JSON-RPC ${code})${detail ? `: ${detail}` : ''}`;
}
