/**
 * The embedded database's boundaries: one process owns a DATA_DIR (also across
 * pid namespaces, as two containers on one volume), a killed owner's directory
 * is free for the next start, no acknowledged write is lost, and the database
 * listens on no port.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { DataDirInUseError, lockDataDir } from '../../src/db/data-dir-lock';
import { openDatabaseServer } from '../../src/db/embedded';
import { bearer } from '../support/auth';
import { waitFor } from '../support/poll';
import { type SpawnedServer, spawnServer, startServer, waitReady } from '../support/spawn-server';

/**
 * Each server in a pid namespace of its own, where it is pid 1, as in a
 * container; `--kill-child` takes it down if the test dies. Needs root (or
 * user namespaces): where unshare is refused, the test that uses it is skipped
 * and says why.
 */
const OWN_PID_NAMESPACE = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child'];
const unshareProbe = spawnSync(OWN_PID_NAMESPACE[0]!, [...OWN_PID_NAMESPACE.slice(1), 'true'], { encoding: 'utf8' });
const unshareRefused =
  unshareProbe.error?.message ??
  (unshareProbe.status === 0 ? undefined : unshareProbe.stderr.trim() || 'unshare failed');

/** The host's pid of the process that is pid 1 in the namespace `unshare` (pid `wrapper`) made. */
async function namespaceInit(wrapper: number): Promise<number> {
  let pid = 0;
  await waitFor('the namespaced server to be forked', () => {
    const children = readFileSync(`/proc/${wrapper}/task/${wrapper}/children`, 'utf8').trim();
    pid = Number(children.split(/\s+/)[0]);
    return pid > 0;
  });
  return pid;
}

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
        // unshare ignores SIGTERM while it waits; SIGKILL makes it kill its child (--kill-child).
        s.child.kill(s.child.spawnfile === 'unshare' ? 'SIGKILL' : 'SIGTERM');
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
  }, 120_000);

  it('refuses a second owner in the same process, and frees the directory on close', async () => {
    const dir = newDir();
    const server = await openDatabaseServer({ databaseUrl: undefined, dataDir: dir }, () => undefined);
    await expect(openDatabaseServer({ databaseUrl: undefined, dataDir: dir }, () => undefined)).rejects.toThrow(
      DataDirInUseError,
    );
    await server.close();
    await (await lockDataDir(dir)).release();
  }, 120_000);

  it('refuses a second process on the same DATA_DIR, naming it and the owner; takes over after kill -9', async () => {
    const dir = newDir();
    const first = await startServer({ DATA_DIR: dir, LOG_LEVEL: 'warn' });
    servers.push(first);
    const ownerPid = (JSON.parse(readFileSync(join(dir, 'owner.lock'), 'utf8')) as { pid: number }).pid;
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
    expect(second.output()).toContain(`DATA_DIR ${dir} is in use by process ${ownerPid} on host ${hostname()}`);
    // The owner was not disturbed.
    expect((await fetch(`${first.url}/conversations/owned/resources/note`, { headers: bearer() })).status).toBe(200);

    // kill -9 frees the lock (the kernel drops it with the holder); the next start takes it.
    process.kill(ownerPid, 'SIGKILL');
    await first.exited;
    const third = await startServer({ DATA_DIR: dir, LOG_LEVEL: 'warn' });
    servers.push(third);
    const get = await fetch(`${third.url}/conversations/owned/resources/note`, { headers: bearer() });
    expect(get.status).toBe(200);
    expect(((await get.json()) as { data: unknown }).data).toEqual({ by: 'first' });
  }, 120_000);

  (unshareRefused ? it.skip : it)(
    `two servers in separate pid namespaces (each pid 1, as two containers on one volume): the second refuses, no acknowledged write is lost${unshareRefused ? ` [skipped: unshare is not permitted here: ${unshareRefused}]` : ''}`,
    async () => {
      const dir = newDir();
      const note = (s: SpawnedServer): string => `${s.url}/conversations/volume/resources/note`;
      const first = await startServer({ DATA_DIR: dir, LOG_LEVEL: 'warn' }, OWN_PID_NAMESPACE);
      servers.push(first);
      const firstInit = await namespaceInit(first.child.pid!);
      expect(readFileSync(`/proc/${firstInit}/status`, 'utf8')).toMatch(/^NSpid:\s+\d+\s+1$/m);
      const put = await fetch(note(first), {
        method: 'PUT',
        headers: { 'content-type': 'application/json', ...bearer() },
        body: JSON.stringify({ data: { acknowledged: true } }),
      });
      expect(put.status).toBe(201);

      // The second is pid 1 too: a pid-based lock would take the first's pid 1 for its own stale one.
      const second = await spawnServer({ DATA_DIR: dir, LOG_LEVEL: 'warn' }, undefined, OWN_PID_NAMESPACE);
      servers.push(second);
      const outcome = await Promise.race([
        second.exited.then((code) => `exited with ${code}`),
        waitReady(second).then(
          () => 'started beside the first',
          () => 'not ready',
        ),
      ]);
      expect(outcome).toBe('exited with 1');
      expect(second.output()).toContain(`DATA_DIR ${dir} is in use by process 1 on host ${hostname()}`);
      expect((await fetch(note(first), { headers: bearer() })).status).toBe(200);

      // A graceful stop (as `docker stop`), then a new container: the write is there.
      process.kill(firstInit, 'SIGTERM');
      expect(await first.exited).toBe(0);
      const third = await startServer({ DATA_DIR: dir, LOG_LEVEL: 'warn' }, OWN_PID_NAMESPACE);
      servers.push(third);
      const got = await fetch(note(third), { headers: bearer() });
      expect(got.status).toBe(200);
      expect(((await got.json()) as { data: unknown }).data).toEqual({ acknowledged: true });

      // kill -9 of pid 1 ends its whole namespace, the lock's holder with it: the next start is not refused.
      process.kill(await namespaceInit(third.child.pid!), 'SIGKILL');
      await third.exited;
      const fourth = await startServer({ DATA_DIR: dir, LOG_LEVEL: 'warn' }, OWN_PID_NAMESPACE);
      servers.push(fourth);
      const again = await fetch(note(fourth), { headers: bearer() });
      expect(((await again.json()) as { data: unknown }).data).toEqual({ acknowledged: true });
    },
    180_000,
  );
});
