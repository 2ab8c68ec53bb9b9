/**
 * The MCP endpoint's fast path: a `tools/call` of a listed tool, from a
 * 2026-07-28 client or a 2025 one, answered without the SDK's per-request
 * serving.
 *
 * `createMcpHandler` serves each HTTP request with a fresh server instance:
 * the Node request becomes a web `Request`, a server is built, connected to
 * a single-use transport, validates the message with zod schemas, runs the
 * handler, validates and encodes the result, is closed again, and the web
 * `Response` is streamed back into Node's. Profiled under load
 * (docs/BENCHMARKS.md §9), that machinery, not the call, was most of the
 * cost of a call: a tools/call ran at a third of REST negotiate's throughput.
 * Serving the same call through one long-lived server (the caller passed in
 * authInfo) still left the protocol layer's per-message zod checks and
 * allocations at ~0.65 of REST; hence this path.
 *
 * It takes a request only when the SDK would serve it exactly so:
 * - it is a JSON-RPC request as the SDK's strict schema has it, and the
 *   SDK's own `classifyInboundRequest` (its HTTP entry's era decision and
 *   `_meta` envelope validation) classifies it as a modern request of
 *   2026-07-28 (run once per distinct envelope: see modernEnvelope);
 * - the standard headers repeat the body exactly (`MCP-Protocol-Version`,
 *   `Mcp-Method`, `Mcp-Name`), so the SDK's header checks pass it;
 * - its params hold only `name` (a listed tool), `arguments` (an object) and
 *   `_meta` with only the envelope's keys, `approvalId` and `saveAs`: what the SDK's
 *   tools/call schema accepts as it stands, with no task, input responses,
 *   request state or progress token that the SDK would act on.
 * A 2025 request (no envelope: only `approvalId` or `saveAs` in `_meta`) is taken when
 * the SDK's stateless legacy transport would take it as it is (servedLegacy).
 * Then the handler the SDK would run, `callTool` (conversation-server.ts),
 * runs, and its result is encoded as the SDK's codec of the era encodes a
 * tools/call result (2026-07-28: `resultType`, the server's identity in
 * `_meta`; 2025: as it is), and written as its transport writes it (a JSON
 * body; a 2025 answer as one message event on an SSE stream).
 * Every other request goes the SDK's way, unchanged. A test sends the same
 * calls both ways and compares the answers (test/http/mcp-fast-path.test.ts).
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  type CallToolRequestParams,
  type CallToolResult,
  classifyInboundRequest,
  type InboundHttpRequest,
  isJsonContentType,
  type JSONRPCRequest,
  LOG_LEVEL_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  SERVER_INFO_META_KEY,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/server';
import type { Request } from 'express';
import { isRecord } from '../core/tool-module';

/** The revision the fast path serves (the SDK's only modern one). */
export const MODERN_REVISION = '2026-07-28';

const REQUEST_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
const PARAM_KEYS = new Set(['name', 'arguments', '_meta']);
const LEGACY_META_KEYS = new Set(['approvalId', 'saveAs']);
const LEGACY_REVISIONS: ReadonlySet<string> = new Set(SUPPORTED_PROTOCOL_VERSIONS);
const META_KEYS = new Set([
  PROTOCOL_VERSION_META_KEY,
  CLIENT_INFO_META_KEY,
  CLIENT_CAPABILITIES_META_KEY,
  LOG_LEVEL_META_KEY,
  'approvalId',
  'saveAs',
]);

/** Envelopes seen, by their JSON: whether the SDK classifies them modern (bounded: cleared when full). */
const verdicts = new Map<string, boolean>();
const MAX_VERDICTS = 1024;
/** Longer envelopes are classified every time, not kept (what a client sends is ~150 characters). */
const MAX_KEPT_ENVELOPE = 2048;

function onlyKeys(value: Record<string, unknown>, allowed: ReadonlySet<string>): boolean {
  for (const key in value) if (!allowed.has(key)) return false;
  return true;
}

/** A tools/call the fast path takes: its JSON-RPC id and params. */
export interface FastToolCall {
  /** 2026-07-28, or a 2025 revision (the SDK's stateless legacy serving, which answers with an SSE stream). */
  era: 'modern' | 'legacy';
  id: JSONRPCRequest['id'];
  params: CallToolRequestParams;
}

/**
 * The request as the fast path takes it, or undefined for the SDK's way (see
 * the file's comment): `toolNames` are the names tools/call takes exactly.
 */
export function fastToolCall(req: Request, toolNames: ReadonlySet<string>): FastToolCall | undefined {
  if (req.method !== 'POST' || !isJsonContentType(req.headers['content-type'])) return undefined;
  const body = req.body as unknown;
  // A JSON-RPC request as the SDK's (strict) schema has it: these keys only, an id that is a string or an integer.
  if (!isRecord(body) || !onlyKeys(body, REQUEST_KEYS) || body.method !== 'tools/call' || body.jsonrpc !== '2.0') {
    return undefined;
  }
  const id = body.id;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  const params = body.params;
  if (!isRecord(params) || !onlyKeys(params, PARAM_KEYS)) return undefined;
  const { name, arguments: args, _meta: meta } = params;
  if (typeof name !== 'string' || !toolNames.has(name)) return undefined;
  if (args !== undefined && !isRecord(args)) return undefined;
  if (meta === undefined || (isRecord(meta) && onlyKeys(meta, LEGACY_META_KEYS))) {
    // No envelope (only approvalId or saveAs): the SDK serves it as a 2025 request.
    return servedLegacy(req)
      ? { era: 'legacy', id: id as string | number, params: params as CallToolRequestParams }
      : undefined;
  }
  if (!isRecord(meta) || !onlyKeys(meta, META_KEYS) || meta[PROTOCOL_VERSION_META_KEY] !== MODERN_REVISION) {
    return undefined;
  }
  const { headers } = req;
  if (
    headers['mcp-protocol-version'] !== MODERN_REVISION ||
    headers['mcp-method'] !== 'tools/call' ||
    headers['mcp-name'] !== name
  ) {
    return undefined;
  }
  return modernEnvelope(meta, () => ({
    httpMethod: 'POST',
    protocolVersionHeader: MODERN_REVISION,
    mcpMethodHeader: 'tools/call',
    mcpNameHeader: name,
    body,
  }))
    ? { era: 'modern', id: id as string | number, params: params as CallToolRequestParams }
    : undefined;
}

/**
 * Whether the SDK's stateless legacy serving takes a 2025 request with
 * these headers as it is: it must accept both JSON and SSE (the transport's
 * own substring test), and name a 2025 revision it serves, or none.
 */
function servedLegacy(req: Request): boolean {
  const accept = req.headers.accept;
  if (typeof accept !== 'string' || !accept.includes('application/json') || !accept.includes('text/event-stream')) {
    return false;
  }
  const version = req.headers['mcp-protocol-version'];
  return version === undefined || LEGACY_REVISIONS.has(version as string);
}

/**
 * Whether the SDK classifies a request with this `_meta` as a modern one of
 * 2026-07-28, its envelope valid. With the checks above (the JSON-RPC shape,
 * the method, the headers equal to the body), that verdict depends on `_meta`
 * alone, and a client sends the same envelope with every call: the verdict
 * is kept by the envelope's JSON, and the SDK's classification (zod
 * schemas) runs once per envelope, not per call.
 */
function modernEnvelope(meta: Record<string, unknown>, request: () => InboundHttpRequest): boolean {
  const key = JSON.stringify(meta);
  let verdict = verdicts.get(key);
  if (verdict === undefined) {
    const route = classifyInboundRequest(request());
    verdict =
      route.kind === 'modern' && route.messageKind === 'request' && route.classification.revision === MODERN_REVISION;
    if (key.length <= MAX_KEPT_ENVELOPE) {
      if (verdicts.size >= MAX_VERDICTS) verdicts.clear();
      verdicts.set(key, verdict);
    }
  }
  return verdict;
}

/**
 * The JSON-RPC response to a tools/call, as the SDK's 2026-07-28 serving
 * writes it: a result stamped with `resultType` and the server's identity
 * (no cache fields: tools/call results are not cacheable), or the error a
 * handler threw (its code as the codec maps it: -32002 became -32602).
 */
export function toolCallResponse(
  call: Pick<FastToolCall, 'era' | 'id'>,
  outcome: { result: CallToolResult } | { error: unknown },
  serverInfo: { name: string; version: string },
): Record<string, unknown> {
  const { id } = call;
  // The 2025 codec writes a tools/call result as the handler gave it.
  if ('result' in outcome && call.era === 'legacy') return { result: outcome.result, jsonrpc: '2.0', id };
  if ('result' in outcome) {
    let result: Record<string, unknown> = outcome.result;
    if (result.resultType === undefined) result = { ...result, resultType: 'complete' };
    else if (result.resultType !== 'complete') {
      const err = new ProtocolError(
        ProtocolErrorCode.InternalError,
        `Handler for tools/call returned resultType '${JSON.stringify(result.resultType)}', but results of tools/call only support 'complete' on protocol revision 2026-07-28`,
      );
      return toolCallResponse(call, { error: err }, serverInfo);
    }
    const meta = result._meta;
    if (meta === undefined) result = { ...result, _meta: { [SERVER_INFO_META_KEY]: serverInfo } };
    else if (isRecord(meta) && meta[SERVER_INFO_META_KEY] === undefined) {
      result = { ...result, _meta: { ...meta, [SERVER_INFO_META_KEY]: serverInfo } };
    }
    return { result, jsonrpc: '2.0', id };
  }
  const error = outcome.error as { code?: unknown; message?: unknown; data?: unknown };
  const thrown = typeof error.code === 'number' && Number.isSafeInteger(error.code) ? error.code : -32603;
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: thrown === -32002 ? -32602 : thrown,
      message: typeof error.message === 'string' ? error.message : 'Internal error',
      ...(error.data !== undefined ? { data: error.data } : {}),
    },
  };
}
