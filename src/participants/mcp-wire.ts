/**
 * Reading an MCP upstream's answer to one request off the wire, without the
 * SDK client (mcp-direct-call.ts): a JSON body, or a `text/event-stream` one
 * read as it arrives (the response whose id is ours is taken; notifications
 * and anything else before it are skipped), and the tools/call result
 * checked for the fields the participant service reads, not every field of
 * the protocol's schema.
 *
 * Failures are the SDK's own error classes, so that mcp-errors.ts sorts them
 * exactly as it sorts the SDK client's: a JSON-RPC error is a ProtocolError,
 * anything that is not an answer to the request an SdkError (InvalidResult,
 * "not MCP"), a body that is not JSON a SyntaxError.
 */
import type { Readable } from 'node:stream';
import { type CallToolResult, ProtocolError, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';

/** The events of a `text/event-stream` body, fed chunk by chunk: each complete `message` event's data. */
export class SseReader {
  private readonly decoder = new TextDecoder();
  private pending = '';
  private data: string[] = [];
  private event = '';

  feed(chunk: Uint8Array): string[] {
    const text = this.pending + this.decoder.decode(chunk, { stream: true });
    const events: string[] = [];
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      // A CR that ends the chunk may be the first half of a CRLF: wait for what follows.
      if (c === 13 && i + 1 === text.length) break;
      this.line(text.slice(start, i), events);
      if (c === 13 && text.charCodeAt(i + 1) === 10) i++;
      start = i + 1;
    }
    this.pending = text.slice(start);
    return events;
  }

  private line(line: string, events: string[]): void {
    if (line === '') {
      const data = this.data.join('\n');
      if (data !== '' && (this.event === '' || this.event === 'message')) events.push(data);
      this.data = [];
      this.event = '';
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ":" a comment (a keep-alive)
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.data.push(value);
    else if (field === 'event') this.event = value;
  }
}

type Message = { id?: unknown; result?: unknown; error?: unknown };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The response to request `id` among one parsed JSON-RPC message or batch; undefined when none is. */
export function responseIn(parsed: unknown, id: string): Message | undefined {
  const all = Array.isArray(parsed) ? parsed : [parsed];
  for (const m of all) {
    if (isRecord(m) && m.id === id && ('result' in m || 'error' in m)) return m;
  }
  return undefined;
}

/**
 * The response to request `id` from an SSE body, as soon as its event has
 * arrived (the stream is read on to its end, so the connection is reused).
 * The stream ending first rejects (ConnectionClosed), as does an event that
 * is not JSON (SyntaxError).
 */
export function sseResponse(body: Readable, id: string): Promise<Message> {
  return new Promise((resolve, reject) => {
    const reader = new SseReader();
    let settled = false;
    const fail = (error: Error): void => {
      if (settled) return;
      settled = true;
      reject(error);
    };
    body.on('data', (chunk: Buffer) => {
      if (settled) return;
      try {
        for (const data of reader.feed(chunk)) {
          const response = responseIn(JSON.parse(data), id);
          if (response === undefined) continue;
          settled = true;
          resolve(response);
          return;
        }
      } catch (error) {
        body.destroy();
        // JSON.parse's SyntaxError (the only throw here).
        fail(error as Error);
      }
    });
    body.on('end', () => {
      // Not made when the answer came first: an error's stack costs more than the whole parse.
      if (!settled) fail(new SdkError(SdkErrorCode.ConnectionClosed, 'The response stream ended without an answer'));
    });
    body.on('error', fail);
  });
}

/** A JSON-RPC response as a tools/call result, or its error thrown as the SDK client throws it. */
export function callResultIn(message: Message): CallToolResult | 'not-complete' {
  if ('error' in message) {
    const error = message.error;
    if (!isRecord(error) || typeof error.code !== 'number' || typeof error.message !== 'string') {
      throw new SdkError(SdkErrorCode.InvalidResult, 'A JSON-RPC error without a code and message');
    }
    throw new ProtocolError(error.code, error.message, error.data);
  }
  const result = message.result;
  if (!isRecord(result)) throw new SdkError(SdkErrorCode.InvalidResult, 'A tools/call result that is not an object');
  // 2026-07-28: a result that is not complete (input_required) is for the SDK client's multi-round-trip handling.
  if (result.resultType !== undefined && result.resultType !== 'complete') return 'not-complete';
  const { content, isError, structuredContent } = result;
  const contentOk = content === undefined || (Array.isArray(content) && content.every(isContentBlock));
  if (!contentOk || (isError !== undefined && typeof isError !== 'boolean')) {
    throw new SdkError(SdkErrorCode.InvalidResult, 'A tools/call result whose content or isError is malformed');
  }
  if (structuredContent !== undefined && !isRecord(structuredContent)) {
    throw new SdkError(SdkErrorCode.InvalidResult, 'A tools/call result whose structuredContent is not an object');
  }
  return result as CallToolResult;
}

function isContentBlock(block: unknown): boolean {
  return isRecord(block) && typeof block.type === 'string' && (block.type !== 'text' || typeof block.text === 'string');
}

/** The media type of a Content-Type header, lowercased, without parameters. */
export function mediaType(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return (value ?? '').split(';')[0]!.trim().toLowerCase();
}
