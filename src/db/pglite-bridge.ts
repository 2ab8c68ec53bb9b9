/**
 * In-process connections to an embedded PGlite database, for `pg` clients.
 *
 * PGlite is one Postgres backend: one session, one query at a time. Serving it
 * to a pool of several `pg` connections is only correct if no connection's
 * protocol messages ever land between another's. The socket server of
 * @electric-sql/pglite-socket queues single messages, so the Parse/Bind/
 * Execute/Sync sequences of two connections interleaved and shared the
 * session's unnamed statement and portal ("bind message supplies 5
 * parameters, but prepared statement "" requires 1"): answers carried other
 * requests' rows and acknowledged writes were lost.
 *
 * Here a connection takes the session for a whole exchange: from its first
 * message until the backend answers ReadyForQuery with status `I` (idle,
 * outside a transaction), as it does after the startup, a Sync or a Query. A transaction therefore
 * keeps the session to its connection until COMMIT or ROLLBACK, and a
 * connection that goes away inside one is rolled back before anyone else runs.
 *
 * The connections are in-memory streams handed to `pg` through its `stream`
 * option: no port is opened, so no other process can reach the database
 * (the socket server accepted anyone on 127.0.0.1 as a superuser).
 */
import { Duplex } from 'node:stream';
import type { PGlite } from '@electric-sql/pglite';

const TERMINATE = 0x58; // 'X'

/** One end of an in-memory, bidirectional byte pipe with the socket methods `pg` calls. */
class PipeEnd extends Duplex {
  peer: PipeEnd | undefined;

  override _read(): void {
    // Data is pushed by the peer's writes.
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.peer?.push(chunk);
    done();
  }

  override _final(done: (err?: Error | null) => void): void {
    this.peer?.push(null);
    done();
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    const peer = this.peer;
    this.peer = undefined;
    if (peer && !peer.destroyed) peer.destroy();
    done(err);
  }

  // What pg's Connection calls on a net.Socket.
  connect(): this {
    process.nextTick(() => this.emit('connect'));
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
}

function pipePair(): [PipeEnd, PipeEnd] {
  const a = new PipeEnd({ allowHalfOpen: false });
  const b = new PipeEnd({ allowHalfOpen: false });
  a.peer = b;
  b.peer = a;
  return [a, b];
}

/** A FIFO lock: the holder owns the PGlite session. */
class SessionLock {
  private tail: Promise<void> = Promise.resolve();

  acquire(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const turn = this.tail.then(() => release);
    this.tail = this.tail.then(() => held);
    return turn;
  }
}

/** Splits a byte stream into Postgres wire messages (the first one is the untyped startup packet). */
class MessageFramer {
  private buffer: Buffer = Buffer.alloc(0);
  private startup = true;

  push(chunk: Buffer): Buffer[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const out: Buffer[] = [];
    for (;;) {
      const headerLen = this.startup ? 0 : 1;
      if (this.buffer.length < headerLen + 4) break;
      const size = headerLen + this.buffer.readInt32BE(headerLen);
      if (this.buffer.length < size) break;
      out.push(this.buffer.subarray(0, size));
      this.buffer = this.buffer.subarray(size);
      this.startup = false;
    }
    return out;
  }
}

/** Reads the transaction status of each ReadyForQuery in the backend's output. */
class ReadyForQueryWatcher {
  private buffer: Buffer = Buffer.alloc(0);
  /** `I` idle, `T` in a transaction, `E` in a failed transaction. */
  status = 'I';
  /** Whether a ReadyForQuery was seen since the last reset: the client is at a sync point. */
  ready = false;

  see(chunk: Uint8Array): void {
    this.buffer = this.buffer.length === 0 ? Buffer.from(chunk) : Buffer.concat([this.buffer, chunk]);
    while (this.buffer.length >= 5) {
      const size = 1 + this.buffer.readInt32BE(1);
      if (this.buffer.length < size) break;
      if (this.buffer[0] === 0x5a /* Z */) {
        this.status = String.fromCharCode(this.buffer[5]!);
        this.ready = true;
      }
      this.buffer = this.buffer.subarray(size);
    }
  }
}

/** One client connection: its messages run in exchanges that hold the session lock. */
class BridgeConnection {
  private readonly framer = new MessageFramer();
  private readonly backend = new ReadyForQueryWatcher();
  private release: (() => void) | undefined;
  /** Messages are handled strictly in order, one exchange after another. */
  private work: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly opening: Promise<PGlite>,
    private readonly lock: SessionLock,
    private readonly end: PipeEnd,
    private readonly onError: (err: Error) => void,
  ) {
    end.on('data', (chunk: Buffer) => {
      const messages = this.framer.push(chunk);
      if (messages.length > 0) this.work = this.work.then(() => this.handle(messages));
    });
    end.on('close', () => {
      this.closed = true;
      this.work = this.work.then(() => this.finish());
    });
    end.on('error', () => undefined); // 'close' follows and cleans up
  }

  private async handle(messages: Buffer[]): Promise<void> {
    for (const message of messages) {
      if (this.closed) return;
      if (message[0] === TERMINATE) {
        this.end.destroy();
        return;
      }
      this.release ??= await this.lock.acquire();
      this.backend.ready = false;
      try {
        const db = await this.opening;
        await db.runExclusive(() =>
          db.execProtocolRawStream(new Uint8Array(message), {
            onRawData: (data) => {
              this.backend.see(data);
              if (!this.end.destroyed) this.end.write(Buffer.from(data));
            },
          }),
        );
      } catch (err) {
        this.onError(err as Error);
        this.end.destroy();
        return;
      }
      // The session is free again only at a sync point (the backend answered
      // ReadyForQuery: after startup, Sync, a simple Query) and outside a transaction.
      if (this.backend.ready && this.backend.status === 'I') this.unlock();
    }
  }

  /** A connection that went away mid-transaction is rolled back before the session is handed on. */
  private async finish(): Promise<void> {
    if (!this.release) return;
    try {
      const db = await this.opening;
      if (db.isInTransaction() || this.backend.status !== 'I') await db.exec('ROLLBACK');
    } catch (err) {
      this.onError(err as Error);
    } finally {
      this.unlock();
    }
  }

  private unlock(): void {
    const release = this.release;
    this.release = undefined;
    release?.();
  }
}

export interface PGliteBridge {
  /** A new connection's client end, for pg's `stream` option. */
  connect(): Duplex;
}

/**
 * `db` may still be opening (a new data directory takes seconds to initialise):
 * connections are accepted at once and their first message waits for it.
 */
export function pgliteBridge(
  db: PGlite | Promise<PGlite>,
  onError: (err: Error) => void = () => undefined,
): PGliteBridge {
  const lock = new SessionLock();
  const opening = Promise.resolve(db);
  opening.catch(() => undefined); // reported by whoever awaits the opening; a connection then fails
  return {
    connect() {
      const [client, server] = pipePair();
      new BridgeConnection(opening, lock, server, onError);
      return client;
    },
  };
}
