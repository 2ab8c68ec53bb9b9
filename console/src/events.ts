/**
 * Server-Sent Events read with fetch(): EventSource cannot send an
 * Authorization header, so the stream is read and parsed here (the
 * text/event-stream format of the HTML standard), and reopened after it
 * ends or fails with the last id as Last-Event-ID, so nothing is missed.
 */
import { storedToken } from './api';

export interface StreamEvent {
  id: string | undefined;
  type: string;
  data: unknown;
}

export interface StreamHandlers {
  onEvent: (event: StreamEvent) => void;
  /** The stream is open (again): a client may read the current state once more. */
  onOpen: () => void;
  /** A comment line (`: …`), such as the note that older events are gone. */
  onComment?: (text: string) => void;
  /** The stream is down; it is retried unless the status says it would not help (401, 403). */
  onDown: (reason: string, retrying: boolean) => void;
}

/** Parses `text/event-stream` lines into events, keeping the state between chunks. */
export class EventParser {
  private buffer = '';
  private type = '';
  private data: string[] = [];
  private id: string | undefined;
  lastId: string | undefined;
  retryMs: number | undefined;

  constructor(private readonly handlers: Pick<StreamHandlers, 'onEvent' | 'onComment'>) {}

  push(chunk: string): void {
    this.buffer += chunk;
    let newline: number;
    while ((newline = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buffer.slice(0, newline);
      const width = this.buffer.startsWith('\r\n', newline) ? 2 : 1;
      this.buffer = this.buffer.slice(newline + width);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return this.handlers.onComment?.(line.slice(1).trim());
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.type = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.id = value;
    else if (field === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value);
  }

  private dispatch(): void {
    if (this.id !== undefined) this.lastId = this.id;
    if (this.data.length > 0) {
      const text = this.data.join('\n');
      let data: unknown = text;
      try {
        data = JSON.parse(text);
      } catch {
        // Not JSON: handed over as text.
      }
      this.handlers.onEvent({ id: this.lastId, type: this.type || 'message', data });
    }
    this.type = '';
    this.data = [];
  }
}

/** Opens `path` as an event stream and keeps it open until the returned function is called. */
export function openEventStream(path: string, handlers: StreamHandlers): () => void {
  const abort = new AbortController();
  const parser = new EventParser(handlers);
  let timer: number | undefined;

  const connect = async (): Promise<void> => {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    const token = storedToken();
    if (token) headers.authorization = `Bearer ${token}`;
    if (parser.lastId !== undefined) headers['last-event-id'] = parser.lastId;
    let reason = 'the stream ended';
    try {
      const res = await fetch(path, { headers, signal: abort.signal, cache: 'no-store' });
      if (!res.ok || !res.body) {
        const final = res.status === 401 || res.status === 403;
        handlers.onDown(`${res.status} ${res.statusText}`, !final);
        if (!final) schedule();
        return;
      }
      handlers.onOpen();
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(value);
      }
    } catch (err) {
      if (abort.signal.aborted) return;
      reason = err instanceof Error ? err.message : String(err);
    }
    if (abort.signal.aborted) return;
    handlers.onDown(reason, true);
    schedule();
  };

  const schedule = (): void => {
    timer = window.setTimeout(() => void connect(), parser.retryMs ?? 2000);
  };

  void connect();
  return () => {
    abort.abort();
    if (timer !== undefined) window.clearTimeout(timer);
  };
}
