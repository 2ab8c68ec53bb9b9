/**
 * The DATA_DIR lock on its own: an OS lock (flock) held by a child process,
 * refused to a second owner, free the moment its owner dies, taken again if
 * its holder is killed (and the owner stops if someone else was faster), and
 * exactly one winner when several processes start at once. Also the pid-file
 * fallback for machines without a flock command.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { DataDirInUseError, lockDataDir } from '../../src/db/data-dir-lock';
import { lockDataDirWithPidFile, removeStale } from '../../src/db/pid-lock';
import { ROOT } from '../support/db-server';
import { waitFor } from '../support/poll';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';

/** The pid of a process that has exited (and so cannot own anything). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

/**
 * A child process that takes the lock (or reports who has it), says so on a
 * line, and holds it until its stdin closes. Its other output (the lock's log)
 * is collected.
 */
interface Contender {
  child: ChildProcess;
  answer: Promise<string>;
  output: () => string;
  exited: Promise<number | null>;
}
function contender(dir: string): Contender {
  const script = `
    const { lockDataDir } = require(${JSON.stringify(join(ROOT, 'src', 'db', 'data-dir-lock.ts'))});
    lockDataDir(process.argv[1], { log: (m) => process.stderr.write(m + '\\n') }).then(
      () => process.stdout.write('won\\n'),
      (e) => process.stdout.write('refused ' + (e.owner ? e.owner.pid : '?') + '\\n'));
    process.stdin.resume(); process.stdin.on('end', () => process.exit(0));`;
  const child = spawn(process.execPath, ['--import', 'tsx', '-e', script, dir], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const answer = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.endsWith('\n')) resolve(out.trim());
    });
    child.on('exit', () => reject(new Error(`contender exited before answering: ${err}`)));
  });
  answer.catch(() => undefined);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, answer, output: () => err, exited };
}

/** The lock's holder: the child of `pid` that keeps the lock file open (a `cat`). */
function holderOf(pid: number): number {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).map(Number);
  const holders = children.filter((c) => {
    try {
      return readdirSync(`/proc/${c}/fd`).some((fd) => {
        try {
          return readlinkSync(`/proc/${c}/fd/${fd}`).endsWith('owner.lock');
        } catch {
          return false;
        }
      });
    } catch {
      return false;
    }
  });
  if (holders.length !== 1) throw new Error(`expected one lock holder under ${pid}, found ${holders.join(',')}`);
  return holders[0]!;
}

const running: ChildProcess[] = [];
afterAll(() => {
  for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

describe('DATA_DIR lock (flock)', () => {
  const dirs: ScratchDir[] = [];
  afterAll(() => dirs.forEach((d) => d.remove()));
  const newDir = (): string => {
    const d = scratchDir('lock');
    dirs.push(d);
    return d.path;
  };

  it('refuses a second owner, naming the directory and the owner; free at once after kill -9 of the owner', async () => {
    const dir = newDir();
    const owner = contender(dir);
    running.push(owner.child);
    expect(await owner.answer).toBe('won');

    const refusal = await lockDataDir(dir).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refusal).toBeInstanceOf(DataDirInUseError);
    const err = refusal as DataDirInUseError;
    expect(err.owner).toEqual({ pid: owner.child.pid, host: hostname(), since: expect.any(String) });
    expect(err.message).toContain(`DATA_DIR ${dir} is in use by process ${owner.child.pid} on host ${hostname()}`);

    owner.child.kill('SIGKILL');
    await owner.exited;
    // No staleness rule: the kernel drops the lock as soon as the holder sees its pipe close.
    let lock: Awaited<ReturnType<typeof lockDataDir>> | undefined;
    await waitFor(
      'the lock to be free after kill -9',
      async () => (lock = await lockDataDir(dir).catch(() => undefined)) !== undefined,
      5_000,
    );
    expect(lock!.kind).toBe('flock');
    expect(JSON.parse(readFileSync(join(dir, 'owner.lock'), 'utf8'))).toMatchObject({ pid: process.pid });
    await lock!.release();
    // Released means free: another process takes it at once.
    const next = contender(dir);
    running.push(next.child);
    expect(await next.answer).toBe('won');
    next.child.stdin!.end();
    await next.exited;
  }, 60_000);

  it('refuses a second owner in the same process, and frees the directory on release', async () => {
    const dir = newDir();
    const lock = await lockDataDir(dir);
    await expect(lockDataDir(dir)).rejects.toThrow(DataDirInUseError);
    await lock.release();
    await (await lockDataDir(dir)).release();
    // The lock file stays (a new inode would be a second lock); nothing else is left.
    expect(readdirSync(dir)).toEqual(['owner.lock']);
  });

  it('a holder killed by someone else is replaced, and the owner keeps the directory', async () => {
    const dir = newDir();
    const owner = contender(dir);
    running.push(owner.child);
    expect(await owner.answer).toBe('won');
    const first = holderOf(owner.child.pid!);
    process.kill(first, 'SIGKILL');
    await waitFor('a new holder', () => {
      try {
        return holderOf(owner.child.pid!) !== first;
      } catch {
        return false;
      }
    });
    expect(owner.output()).toContain(`The lock on DATA_DIR ${dir} was lost`);
    await expect(lockDataDir(dir)).rejects.toThrow(DataDirInUseError);
    owner.child.stdin!.end();
    expect(await owner.exited).toBe(0);
  }, 60_000);

  it('an owner whose lock was taken by another process while its holder was dead stops at once', async () => {
    const dir = newDir();
    const owner = contender(dir);
    running.push(owner.child);
    expect(await owner.answer).toBe('won');
    // Frozen, the owner cannot notice its holder's death until another process has the lock.
    process.kill(owner.child.pid!, 'SIGSTOP');
    process.kill(holderOf(owner.child.pid!), 'SIGKILL');
    let thief: Awaited<ReturnType<typeof lockDataDir>> | undefined;
    await waitFor(
      'the lock to be free',
      async () => (thief = await lockDataDir(dir).catch(() => undefined)) !== undefined,
    );
    process.kill(owner.child.pid!, 'SIGCONT');
    expect(await owner.exited).toBe(1);
    expect(owner.output()).toContain(`DATA_DIR ${dir} is in use by process ${process.pid}`);
    expect(owner.output()).toContain('this process stops now');
    await thief!.release();
  }, 60_000);

  it('of six processes starting at once on a directory, exactly one wins and the others name it', async () => {
    const dir = newDir();
    const contenders = Array.from({ length: 6 }, () => contender(dir));
    running.push(...contenders.map((c) => c.child));
    const answers = await Promise.all(contenders.map((c) => c.answer));
    const winners = contenders.filter((_, i) => answers[i] === 'won');
    expect(winners).toHaveLength(1);
    const owner = JSON.parse(readFileSync(join(dir, 'owner.lock'), 'utf8')) as { pid: number };
    expect(owner.pid).toBe(winners[0]!.child.pid);
    // A loser that looked before the winner wrote its name says '?'; none names anyone else.
    for (const a of answers) if (a !== 'won') expect([`refused ${owner.pid}`, 'refused ?']).toContain(a);
    for (const c of contenders) c.child.stdin!.end();
    await Promise.all(contenders.map((c) => c.exited));
  }, 60_000);
});

describe('DATA_DIR lock: the pid-file fallback (no flock command)', () => {
  const dirs: ScratchDir[] = [];
  afterAll(() => dirs.forEach((d) => d.remove()));
  const newDir = (): string => {
    const d = scratchDir('lock');
    dirs.push(d);
    return d.path;
  };

  it('is used, with a warning, where no flock command exists', async () => {
    const dir = newDir();
    const logged: string[] = [];
    const lock = await lockDataDir(dir, { flockCommand: join(dir, 'no-such-flock'), log: (m) => logged.push(m) });
    expect(lock.kind).toBe('pid-file');
    expect(logged.join('\n')).toContain('No flock command found');
    expect(readFileSync(join(dir, 'owner.pid'), 'utf8').trim()).toBe(String(process.pid));
    await lock.release();
    expect(existsSync(join(dir, 'owner.pid'))).toBe(false);
  });

  it("takes over a dead owner's pid file and leaves no temporary files", () => {
    const dir = newDir();
    writeFileSync(join(dir, 'owner.pid'), `${deadPid()}\n`);
    const lock = lockDataDirWithPidFile(dir);
    expect(readFileSync(lock.path, 'utf8').trim()).toBe(String(process.pid));
    expect(readdirSync(dir)).toEqual(['owner.pid']);
    lock.release();
    expect(existsSync(lock.path)).toBe(false);
  });

  it('a pid file judged stale but taken over meanwhile by a live process is put back, and that owner named', () => {
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
});
