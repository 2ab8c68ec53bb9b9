/**
 * A plain HTTP proxy in front of a real upstream that counts the MCP
 * `tools/call` requests passing through it (so a test can tell how often the
 * gateway called the upstream), and can be stopped and started again on the
 * same port (an upstream that goes away and comes back).
 */
import { type IncomingMessage, type Server, type ServerResponse, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';

export class CountingProxy {
  /** tools/call requests forwarded, by tool name. */
  readonly calls: string[] = [];
  private server: Server | undefined;
  private port = 0;

  constructor(private readonly target: URL) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}${this.target.pathname}`;
  }

  async start(): Promise<void> {
    const server = createServer((req, res) => this.forward(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stops listening and drops open connections: the upstream is unreachable until start(). */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private forward(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      this.count(body);
      const upstream = request(
        {
          host: this.target.hostname,
          port: this.target.port,
          path: req.url,
          method: req.method,
          headers: { ...req.headers, host: this.target.host },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      });
      upstream.end(body);
    });
  }

  private count(body: Buffer): void {
    try {
      const message = JSON.parse(body.toString('utf8')) as { method?: unknown; params?: { name?: unknown } };
      if (message.method === 'tools/call') this.calls.push(String(message.params?.name));
    } catch {
      // Not JSON (a GET stream, a DELETE): not a call.
    }
  }
}
