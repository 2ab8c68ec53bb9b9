/**
 * The embedded database's boundaries: one process owns a DATA_DIR, a lock
 * left by a killed owner is taken over, and the database listens on no port.
 */
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataDirInUseError, lockDataDir } from '../../src/db/data-dir-lock';
import { openDatabaseServer } from '../../src/db/embedded';
import { bearer } from '../support/auth';
import { type SpawnedServer, spawnServer, startServer } from '../support/spawn-server';

/** Inodes of the TCP/TCP6 sockets this process listens on (state 0A in /proc/net/tcp*). */
function listeningSocketInodes(): Set<string> {
  const own = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m) own.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  const listening = new Set<string>();
  for (const table of ['/proc/self/net/tcp', '/proc/self/net/tcp6', '/proc/self/net/unix']) {
    const lines = readFileSync(table, 'utf8').trim().split('\n').slice(1);
    for (const line of lines) {
      const cols = line.trim().split(/\s+/);
      const unix = table.endsWith('unix');
      // unix: Num RefCount Protocol Flags(00010000 = listening) Type St Inode; tcp: ... st(0A) ... inode
      const isListening = unix ? cols[3] === '00010000' : cols[3] === '0A';
      const inode = unix ? cols[6] : cols[9];
      if (isListening && inode && own.has(inode)) listening.add(inode);
    }
  }
  return listening;
}

describe('embedded DATA_DIR', () => {
  const dirs: string[] = [];
  const servers: SpawnedServer[] = [];
  const newDir = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'orchestrator-datadir-'));
    dirs.push(d);
    return d;
  };
  afterAll(async () => {
    for (const s of servers) {
      if (s.child.exitCode === null && s.child.signalCode === null) {
        s.child.kill('SIGTERM');
        await s.exited;
      }
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('opens the database without listening on any socket, and answers queries in-process', async () => {
    const before = listeningSocketInodes();
    const server = await openDatabaseServer({ databaseUrl: undefined, dataDir: newDir() }, () => undefined);
    try {
      const client = new Client(server.clientConfig);
      await client.connect();
      const { rows } = await client.query<{ n: number }>('SELECT 41 + $1::int AS n', [1]);
      expect(rows[0]!.n).toBe(42);
      expect(listeningSocketInodes()).toEqual(before);
      await client.end();
    } finally {
      await server.close();
    }
  });

  it('refuses a second owner in the same process, and frees the directory on close', async () => {
    const dir = newDir();
    const server = await openDatabaseServer({ databaseUrl: undefined, dataDir: dir }, () => undefined);
    await expect(openDatabaseServer({ databaseUrl: undefined, dataDir: dir }, () => undefined)).rejects.toThrow(
      DataDirInUseError,
    );
    await server.close();
    lockDataDir(dir).release();
  });

  it('refuses a second process on the same DATA_DIR, naming it and the owner; takes over after kill -9', async () => {
    const dir = newDir();
    const first = await startServer({ DATA_DIR: dir, LOG_LEVEL: 'warn' });
    servers.push(first);
    const ownerPid = Number(readFileSync(join(dir, 'owner.pid'), 'utf8'));
    expect(() => process.kill(ownerPid, 0)).not.toThrow();
    const put = await fetch(`${first.url}/conversations/owned/resources/note`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', ...bearer() },
      body: JSON.stringify({ data: { by: 'first' } }),
    });
    expect(put.status).toBe(201);

    const second = await spawnServer({ DATA_DIR: dir, LOG_LEVEL: 'warn' });
    servers.push(second);
    expect(await second.exited).not.toBe(0);
    expect(second.output()).toContain(`DATA_DIR ${dir} is in use by process ${ownerPid}`);
    // The owner was not disturbed.
    expect((await fetch(`${first.url}/conversations/owned/resources/note`, { headers: bearer() })).status).toBe(200);

    // kill -9 leaves the pid file behind; the next start sees its owner is gone and takes over.
    process.kill(ownerPid, 'SIGKILL');
    await first.exited;
    const third = await startServer({ DATA_DIR: dir, LOG_LEVEL: 'warn' });
    servers.push(third);
    const get = await fetch(`${third.url}/conversations/owned/resources/note`, { headers: bearer() });
    expect(get.status).toBe(200);
    expect(((await get.json()) as { data: unknown }).data).toEqual({ by: 'first' });
  }, 120_000);
});
