/**
 * `notifications/resources/updated` (API.md, "Shared context, M6",
 * Subscriptions) to official MCP SDK clients on a real listening server: a
 * 2026-07-28 client's `subscriptions/listen` with `resourceSubscriptions`
 * (its own conversation's URIs only: another's is not honored and nothing of
 * it arrives), and a 2025 client's GET stream (every resource of its
 * conversation, whatever resources/subscribe named: it is acknowledged).
 */
import type { AddressInfo } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { bearer, request } from '../support/auth';
import { closeMcpSessions } from '../../src/mcp/conversation-mcp';
import { type TestApp, createTestApp } from '../support/test-app';
import { uniqueId } from '../support/ids';

let t: TestApp;
let server: HttpServer;
let base: string;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  t = await createTestApp();
  server = t.app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const close of closers) await close();
  await closeMcpSessions(t.services);
  await new Promise<void>((resolve) => {
    server?.close(() => resolve());
    server?.closeAllConnections();
  });
  await t?.close();
});

const mcpUrl = (conversationId: string): URL => new URL(`${base}/conversations/${conversationId}/mcp`);

/**
 * Writes `name` until `seen` has a notification of it: the stream hears changes made once it listens,
 * and the replica starts reading the event log as the stream opens, so the first write may precede that.
 */
async function writeUntilNotified(conversationId: string, name: string, seen: string[]): Promise<void> {
  const uri = `context://${conversationId}/${name}`;
  const deadline = Date.now() + 20_000;
  for (let i = 0; !seen.includes(uri); i++) {
    if (Date.now() > deadline) throw new Error(`no notification of ${uri}`);
    await request(t.app).put(`/conversations/${conversationId}/resources/${name}`).send({ data: { i } });
    const until = Date.now() + 500;
    while (!seen.includes(uri) && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  }
}

describe('notifications/resources/updated', () => {
  it('reaches a 2026-07-28 listen stream for the URIs it asked for, of its own conversation only', async () => {
    const id = uniqueId('mcp-upd');
    const other = uniqueId('mcp-upd-other');
    for (const c of [id, other]) await request(t.app).post('/conversations').send({ id: c }).expect(201);
    const client = new Client(
      { name: 'updates-2026', version: '1.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(new StreamableHTTPClientTransport(mcpUrl(id), { requestInit: { headers: bearer() } }));
    closers.push(() => client.close());
    const seen: string[] = [];
    client.setNotificationHandler('notifications/resources/updated', (n) => {
      seen.push(n.params.uri);
    });
    const mine = `context://${id}/note`;
    const theirs = `context://${other}/secret`;
    const subscription = await client.listen({ resourceSubscriptions: [mine, theirs] });
    closers.push(() => subscription.close());
    expect(subscription.honoredFilter).toEqual({ resourceSubscriptions: [mine] });

    await writeUntilNotified(id, 'note', seen);
    // The other conversation's change, then one of ours: ours arrives, theirs never did (events come in order).
    await request(t.app).put(`/conversations/${other}/resources/secret`).send({ data: 1 }).expect(201);
    const count = seen.length;
    await request(t.app).put(`/conversations/${id}/resources/note`).send({ data: 'again' }).expect(200);
    const deadline = Date.now() + 20_000;
    while (seen.length === count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(seen.every((uri) => uri === mine)).toBe(true);
    expect(seen.length).toBeGreaterThan(count);
  });

  it("reaches a 2025 client's GET stream for its conversation's resources; resources/subscribe is acknowledged", async () => {
    const id = uniqueId('mcp-upd25');
    await request(t.app).post('/conversations').send({ id }).expect(201);
    const client = new ClientV1({ name: 'updates-2025', version: '1.0.0' });
    let getOpened!: () => void;
    const getOpen = new Promise<void>((resolve) => (getOpened = resolve));
    await client.connect(
      new TransportV1(mcpUrl(id), {
        requestInit: { headers: bearer() },
        fetch: async (input, init) => {
          const res = await fetch(input, init);
          if ((init?.method ?? 'GET') === 'GET' && res.ok) getOpened();
          return res;
        },
      }),
    );
    closers.push(() => client.close());
    expect(client.getServerCapabilities()?.resources?.subscribe).toBe(true);
    const seen: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      seen.push(n.params.uri);
    });
    await getOpen;
    await expect(client.subscribeResource({ uri: `context://${id}/doc` })).resolves.toEqual({});
    await writeUntilNotified(id, 'doc', seen);
    expect(seen.every((uri) => uri === `context://${id}/doc`)).toBe(true);
  });
});
