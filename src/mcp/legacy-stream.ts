/**
 * The GET stream of 2025-era clients (protocol 2025-03-26 to 2025-11-25): an
 * SSE stream on which the server sends `notifications/tools/list_changed`
 * and `notifications/resources/updated` (of the conversation's resources).
 * The 2026-07-28 revision replaced it with `subscriptions/listen`, and the
 * SDK v2's stateless legacy serving answers GET with 405; 2025 clients that
 * open it (the v1 SDK client does, right after initialize) would then never
 * hear of a tool-set change. So it is served here, statelessly too: no
 * session, nothing but the open response and one bus listener, which is why
 * the client may open it on any replica (event-bus.ts fans events out to all).
 */
import type { Request, Response } from 'express';
import { SUPPORTED_PROTOCOL_VERSIONS, type ServerEvent } from '@modelcontextprotocol/server';
import type { Logger } from '../logger';
import type { McpEventBus } from './event-bus';
import { resourceUri } from './conversation-server';

const TOOLS_CHANGED = `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })}\n\n`;

function refuse(res: Response, status: number, message: string, headers: Record<string, string> = {}): void {
  res
    .status(status)
    .set(headers)
    .json({ jsonrpc: '2.0', error: { code: -32000, message }, id: null });
}

export function serveLegacyStream(
  req: Request,
  res: Response,
  bus: McpEventBus,
  keepAliveMs: number,
  log: Logger,
): void {
  if (!(req.get('accept') ?? '').includes('text/event-stream')) {
    return refuse(res, 406, 'Not Acceptable: the GET stream needs Accept: text/event-stream');
  }
  const version = req.get('mcp-protocol-version');
  // No header: a 2025-03-26 client (the header came with 2025-06-18), served the same way.
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) {
    // A later revision (a date after the last one with GET streams) has none; anything else is unsupported.
    const later = /^\d{4}-\d{2}-\d{2}$/.test(version) && version > '2025-11-25';
    return refuse(
      res,
      later ? 405 : 400,
      later
        ? `Method not allowed: protocol ${version} has no GET stream; send subscriptions/listen`
        : `Unsupported protocol version: ${version.slice(0, 64)} (supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`,
      later ? { allow: 'POST' } : {},
    );
  }
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  // Stateless: no resources/subscribe is remembered, so the stream carries every resource of its conversation.
  const resources = resourceUri(req.params.conversationId as string, '');
  const unsubscribe = bus.subscribe((event: ServerEvent) => {
    if (event.kind === 'tools_list_changed') res.write(TOOLS_CHANGED);
    else if (event.kind === 'resource_updated' && event.uri.startsWith(resources)) {
      const updated = { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: event.uri } };
      res.write(`event: message\ndata: ${JSON.stringify(updated)}\n\n`);
    }
  });
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), keepAliveMs);
  keepAlive.unref();
  res.once('close', () => {
    unsubscribe();
    clearInterval(keepAlive);
    log.debug({ conversationId: req.params.conversationId }, 'MCP GET stream closed');
  });
}
