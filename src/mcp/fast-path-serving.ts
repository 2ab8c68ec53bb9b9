/**
 * A `tools/call` on the MCP fast path (mcp-fast-path.ts) served: negotiate
 * decides access with the call's own decision statement, and its access
 * refusal is answered as the endpoint's own check would answer it.
 */
import type { Request, Response } from 'express';
import { AppError, isUnavailable } from '../core/errors';
import type { HoldRequest } from '../core/held-calls';
import type { NegotiationResult } from '../core/negotiation';
import { forbidden, type Principal } from '../core/principal';
import { noteNegotiation } from '../http/middleware';
import type { Services } from '../services';
import { type ConversationCaller, SERVER_NAME, SERVER_VERSION, callTool } from './conversation-server';
import { type FastToolCall, toolCallResponse } from './mcp-fast-path';

/** What the factory needs of the HTTP request; travels as the SDK's pass-through authInfo. */
export interface McpCaller extends ConversationCaller {
  /** A tools/call's outcome, for the request's log line (tool, action, outcome). */
  onNegotiated: (result: NegotiationResult) => void;
}

/** negotiate's answers that the endpoint gives as it gives its own access check's: problem+json. */
function isAccessRefusal(err: unknown): err is Error {
  return (err instanceof AppError && (err.code === 'not_found' || err.code === 'forbidden')) || isUnavailable(err);
}

const SERVER_INFO = { name: SERVER_NAME, version: SERVER_VERSION };
/** The SDK's legacy transport's SSE response headers. */
const LEGACY_SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/** A tools/call on the fast path (mcp-fast-path.ts): negotiate decides access, its refusal is answered here. */
export async function serveFast(
  services: Services,
  req: Request,
  res: Response,
  fast: { principal: Principal; conversationId: string; call: FastToolCall; hold: HoldRequest | undefined },
): Promise<void> {
  const { principal, conversationId, call, hold } = fast;
  let refusal: Error | undefined;
  const caller: McpCaller = {
    principal,
    conversationId,
    requestId: req.id ?? '-',
    onNegotiated: (result) => noteNegotiation(req, result),
    hold,
    refuse: (err) => {
      if (!isAccessRefusal(err)) return false;
      refusal = err;
      return true;
    },
  };
  let outcome: Parameters<typeof toolCallResponse>[1];
  try {
    outcome = { result: await callTool(services, caller, call.params) };
  } catch (error) {
    outcome = { error };
  }
  if (refusal !== undefined) {
    // As the endpoint's own check words it (negotiate's says "may not negotiate").
    throw refusal instanceof AppError && refusal.code === 'forbidden'
      ? forbidden(principal, 'use the MCP endpoint')
      : refusal;
  }
  const message = JSON.stringify(toolCallResponse(call, outcome, SERVER_INFO));
  if (call.era === 'modern') {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(message) });
    return void res.end(message);
  }
  // As the SDK's legacy transport answers a request: one message event on an SSE stream, then its end.
  const body = `event: message\ndata: ${message}\n\n`;
  res.writeHead(200, { ...LEGACY_SSE_HEADERS, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
