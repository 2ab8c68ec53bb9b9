/**
 * Every replica serves the same tool set (issue 19, item 7): two processes of
 * the real entry file on one Postgres and one TOOLS_DIR, where only replica B
 * watches the directory (TOOLS_HOT_RELOAD) and replica A does not. A tool file
 * that appears, changes or disappears is served by A too, with no client of A
 * listening; and a client listening on A, once told that the list changed,
 * lists the new set there (A reloads before it tells its listeners).
 *
 * Two processes need a Postgres server both reach: on the embedded database
 * (one process per data directory) the in-process replicas of
 * test/http/mcp-replicas.test.ts cover the same bus.
 */
import { unlinkSync } from 'node:fs';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { bearer } from '../support/auth';
import { createEmptyDatabase, serverUrl, type UrlTestDatabase } from '../support/db-server';
import { uniqueId } from '../support/ids';
import { waitFor } from '../support/poll';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { type SpawnedServer, startServer } from '../support/spawn-server';
import { shoutToolModule } from '../support/fixtures';

const onServer = serverUrl() !== undefined;
// Two processes share a database only on a Postgres server (TEST_DATABASE_URL); CI always has one.
const describeOnServer = onServer ? describe : describe.skip;

let db: UrlTestDatabase;
let toolsDir: ScratchDir;
let a: SpawnedServer; // does not watch TOOLS_DIR
let b: SpawnedServer; // watches it
const clients: Client[] = [];

async function toolNames(server: SpawnedServer): Promise<string[]> {
  const res = await fetch(`${server.url}/tools`, { headers: bearer() });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { tools: Array<{ name: string }> };
  return body.tools.map((t) => t.name);
}

async function mcpClient(server: SpawnedServer, conversationId: string): Promise<Client> {
  const client = new Client(
    { name: 'tool-set-replicas', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/conversations/${conversationId}/mcp`), {
      requestInit: { headers: bearer() },
    }),
  );
  clients.push(client);
  return client;
}

async function stop(server: SpawnedServer | undefined): Promise<void> {
  if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return;
  server.child.kill('SIGTERM');
  await server.exited;
}

describeOnServer('two replicas, one watching TOOLS_DIR', () => {
  beforeAll(async () => {
    db = await createEmptyDatabase();
    toolsDir = scratchDir('tool-set-replicas');
    const common = { DATABASE_URL: db.url, TOOLS_DIR: toolsDir.path, LOG_LEVEL: 'warn' };
    // Started one after the other: B's migration and A's are the same; the second finds them applied.
    a = await startServer({ ...common, TOOLS_HOT_RELOAD: 'false' });
    b = await startServer({ ...common, TOOLS_HOT_RELOAD: 'true' });
  }, 120_000);

  afterAll(async () => {
    for (const client of clients.splice(0)) await client.close().catch(() => undefined);
    await Promise.all([stop(a), stop(b)]);
    toolsDir?.remove();
    await db?.close();
  });

  it('a tool file added, changed and removed is served by the replica that does not watch', async () => {
    expect(await toolNames(a)).not.toContain('replica-added');

    toolsDir.write('replica-added.js', shoutToolModule('replica-added', 'First description'));
    await waitFor('B (watching) to load the new tool', async () => (await toolNames(b)).includes('replica-added'));
    await waitFor('A (not watching) to load it too', async () => (await toolNames(a)).includes('replica-added'), 5000);

    toolsDir.write('replica-added.js', shoutToolModule('replica-added', 'Second description'));
    const description = async (server: SpawnedServer): Promise<string | undefined> => {
      const res = await fetch(`${server.url}/tools/replica-added`, { headers: bearer() });
      return res.ok ? ((await res.json()) as { description: string }).description : undefined;
    };
    await waitFor('A to serve the changed definition', async () => (await description(a)) === 'Second description');

    unlinkSync(toolsDir.file('replica-added.js'));
    await waitFor('A to drop the removed tool', async () => !(await toolNames(a)).includes('replica-added'));
    expect(await toolNames(b)).not.toContain('replica-added');
  });

  it('a client listening on A, told that the list changed, then lists the new tool on A', async () => {
    const conversationId = uniqueId('tool-set-listen');
    const listener = await mcpClient(a, conversationId);
    const listed: string[][] = [];
    let told!: () => void;
    const toldOnce = new Promise<void>((resolve) => (told = resolve));
    listener.setNotificationHandler('notifications/tools/list_changed', () => {
      // What the client sees right after the notice, as a host re-lists then.
      void listener.listTools().then(({ tools }) => {
        listed.push(tools.map((t) => t.name));
        told();
      });
    });
    const subscription = await listener.listen({ toolsListChanged: true });

    toolsDir.write('replica-listened.js', shoutToolModule('replica-listened', 'Announced to A'));
    await toldOnce;
    expect(listed[0]).toContain('replica-listened_shout-text');

    // And a call to it on A runs there.
    const caller = await mcpClient(a, conversationId);
    const result = await caller.callTool({ name: 'replica-listened_shout-text', arguments: { text: 'hi' } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toEqual({ shouted: 'HI' });
    await subscription.close();
  });
});

if (!onServer) {
  it('needs a Postgres server shared by two processes (TEST_DATABASE_URL); the embedded path is one process', () => {
    expect(onServer).toBe(false);
  });
}
