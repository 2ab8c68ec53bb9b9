/**
 * The real entry point as a newcomer runs it: on the embedded database
 * (DATABASE_URL unset) it migrates, serves, keeps data under DATA_DIR across
 * a restart, and on SIGTERM stops cleanly with exit code 0.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './support/db-server';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

interface Running {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

async function startServer(dataDir: string): Promise<Running> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
  };
  delete env.DATABASE_URL;
  delete env.TEST_DATABASE_URL;
  const child = spawn(process.execPath, [require.resolve('tsx/cli'), join(ROOT, 'src', 'server.ts')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  // Readiness is polled: the process first starts PGlite and migrates.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await fetch(`${url}/readyz`).catch(() => undefined);
    if (res?.ok) break;
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`server did not become ready:\n${out}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return { child, url, output: () => out, exited };
}

describe('npm start on the embedded database', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'orchestrator-data-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('keeps data across a restart and stops cleanly on SIGTERM', async () => {
    const first = await startServer(dataDir);
    expect(first.output()).toContain('Using embedded Postgres (PGlite)');
    const put = await fetch(`${first.url}/conversations/restart-check/resources/note`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ data: { kept: true } }),
    });
    expect(put.status).toBe(201);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.output()).toContain('Stopped');

    const second = await startServer(dataDir);
    expect(second.output()).toContain('Database schema is up to date');
    const get = await fetch(`${second.url}/conversations/restart-check/resources/note`);
    expect(get.status).toBe(200);
    expect(await get.json()).toMatchObject({ name: 'note', data: { kept: true }, version: 1, createdBy: 'client' });
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 120_000);
});
