/**
 * The DATA_DIR lock on its own: a dead owner's lock is taken over, and of
 * several processes starting at once on a directory with a stale lock,
 * exactly one gets it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataDirInUseError, lockDataDir, removeStale } from '../../src/db/data-dir-lock';
import { ROOT } from '../support/db-server';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';

/** The pid of a process that has exited (and so cannot own anything). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

describe('DATA_DIR lock', () => {
  const dirs: ScratchDir[] = [];
  afterAll(() => dirs.forEach((d) => d.remove()));
  const newDir = (): string => {
    const d = scratchDir('lock');
    dirs.push(d);
    return d.path;
  };

  it("takes over a dead owner's lock and leaves no temporary files", () => {
    const dir = newDir();
    writeFileSync(join(dir, 'owner.pid'), `${deadPid()}\n`);
    const lock = lockDataDir(dir);
    expect(readFileSync(lock.path, 'utf8').trim()).toBe(String(process.pid));
    expect(readdirSync(dir)).toEqual(['owner.pid']);
    lock.release();
    expect(existsSync(lock.path)).toBe(false);
  });

  it('a lock judged stale but taken over meanwhile by a live process is put back, and that owner named', () => {
    const dir = newDir();
    const path = join(dir, 'owner.pid');
    // What a second process sees after the first took the stale lock over between its read and its move.
    const live = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    try {
      writeFileSync(path, `${live.pid}\n`);
      expect(() => removeStale(dir, path, deadPid())).toThrow(DataDirInUseError);
      expect(readFileSync(path, 'utf8').trim()).toBe(String(live.pid));
      expect(readdirSync(dir)).toEqual(['owner.pid']);
    } finally {
      live.kill();
    }
  });

  it('of six processes racing for a directory with a stale lock, exactly one wins', async () => {
    const dir = newDir();
    writeFileSync(join(dir, 'owner.pid'), `${deadPid()}\n`);
    // Each child takes the lock (or reports who has it), says so, and holds it until its stdin closes.
    const script = `
      const { lockDataDir } = require(${JSON.stringify(join(ROOT, 'src', 'db', 'data-dir-lock.ts'))});
      try { lockDataDir(process.argv[1]); process.stdout.write('won\\n'); }
      catch (e) { process.stdout.write('refused ' + e.ownerPid + '\\n'); }
      process.stdin.resume(); process.stdin.on('end', () => process.exit(0));`;
    const children = Array.from({ length: 6 }, () =>
      spawn(process.execPath, ['--import', 'tsx', '-e', script, dir], {
        cwd: ROOT,
        stdio: ['pipe', 'pipe', 'inherit'],
      }),
    );
    const answers = await Promise.all(
      children.map(
        (c) =>
          new Promise<string>((resolve) => {
            let out = '';
            c.stdout.on('data', (d: Buffer) => {
              out += d.toString();
              if (out.endsWith('\n')) resolve(out.trim());
            });
          }),
      ),
    );
    const winners = children.filter((_, i) => answers[i] === 'won');
    expect(winners).toHaveLength(1);
    const owner = Number(readFileSync(join(dir, 'owner.pid'), 'utf8'));
    expect(owner).toBe(winners[0]!.pid);
    for (const a of answers) if (a !== 'won') expect(a).toBe(`refused ${owner}`);
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            c.on('exit', () => resolve());
            c.stdin.end();
          }),
      ),
    );
  }, 60_000);
});
