/**
 * One process owns an embedded DATA_DIR. PGlite keeps no lock of its own, and
 * two processes writing one data directory each believe they own it: writes
 * acknowledged by one vanish when the other flushes its state.
 *
 * The owner holds an exclusive advisory lock (flock(2)) on `DATA_DIR/owner.lock`
 * for as long as it lives. Node has no flock in its core, so the lock is held
 * by a small child process (a shell that runs `flock -n 9` on the lock file's
 * descriptor, then becomes `cat` reading a pipe from this process): when this
 * process ends in any way (close, crash, kill -9), the pipe closes, `cat`
 * exits and the kernel drops the lock. Nothing rests on pids, so processes
 * in different pid namespaces (two containers on one volume, each server
 * being pid 1) or on different hosts sharing the directory over NFS (whose
 * clients emulate flock with byte-range locks) see each other, and a killed
 * owner's lock is free at once, without a staleness rule. `flock` is util-linux's on Debian and most
 * distributions, busybox's on Alpine (the Docker image).
 *
 * After taking the lock, the owner writes its pid, host name and start time
 * into the lock file, only so that a refused process can say who holds it.
 * The file is never removed or replaced: a new inode under the same name would
 * be a second, independent lock.
 *
 * Where no `flock` command exists (macOS ships none; a distroless image), the
 * lock falls back to the pid file of earlier versions (`pid-lock.ts`), with a
 * warning: that one cannot see an owner in another pid namespace or on
 * another host.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { DataDirInUseError, type DataDirOwner } from './data-dir-in-use';
import { PID_FILE, lockDataDirWithPidFile } from './pid-lock';

export { DataDirInUseError, type DataDirOwner } from './data-dir-in-use';

export interface DataDirLock {
  readonly path: string;
  /** How the lock is held: `flock` (an OS lock), or `pid-file` where no flock command exists. */
  readonly kind: 'flock' | 'pid-file';
  /** Frees the directory; resolves once another process can take it. */
  release(): Promise<void>;
}

export interface LockOptions {
  /**
   * Warnings (the pid-file fallback) and the loss of the lock: when its holder
   * process is killed by someone, the lock is taken again; if another process
   * was faster, this one logs that and exits 1 at once, writing nothing more.
   */
  log?: (message: string) => void;
  /** The flock command; a test points it at a missing file to see the fallback. */
  flockCommand?: string;
}

export const LOCK_FILE = 'owner.lock';

function readOwner(path: string): DataDirOwner | undefined {
  try {
    const owner = JSON.parse(readFileSync(path, 'utf8')) as Partial<DataDirOwner>;
    if (typeof owner.pid === 'number' && typeof owner.host === 'string' && typeof owner.since === 'string') {
      return { pid: owner.pid, host: owner.host, since: owner.since };
    }
  } catch {
    // empty (the owner has not written it yet) or unreadable: no details
  }
  return undefined;
}

/** Writes who holds the lock into the lock file itself, in place (same inode). */
function writeOwner(path: string): void {
  const fd = openSync(path, 'r+');
  try {
    ftruncateSync(fd, 0);
    const owner: DataDirOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
    writeSync(fd, `${JSON.stringify(owner)}\n`, 0);
  } finally {
    closeSync(fd);
  }
}

type Attempt =
  { kind: 'held'; holder: ChildProcess } | { kind: 'busy' } | { kind: 'no-flock' } | { kind: 'failed'; reason: string };

/**
 * The holder: a shell opens the lock file on fd 9, `flock -n 9` locks that
 * open file (or fails at once, exit 1 and silent, in util-linux and busybox
 * alike) and exits, leaving the lock with fd 9; the shell says `locked` and
 * becomes `cat`, which keeps fd 9 until our end of its stdin closes. One
 * process holds the lock, so its exit is exactly the lock's release.
 */
const HOLD_SCRIPT = 'exec 9>>"$1" && "$2" -n 9 && echo locked && exec cat >/dev/null';

function tryHold(path: string, command: string): Promise<Attempt> {
  return new Promise((resolveAttempt) => {
    // detached: its own process group, so a Ctrl-C in the terminal does not
    // free the lock while this process is still closing the database.
    const holder = spawn('sh', ['-c', HOLD_SCRIPT, 'data-dir-lock', path, command], {
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    let err = '';
    let settled = false;
    const settle = (attempt: Attempt): void => {
      if (settled) return;
      settled = true;
      resolveAttempt(attempt);
    };
    holder.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('locked\n')) settle({ kind: 'held', holder });
    });
    holder.stderr.on('data', (d: Buffer) => (err += d.toString()));
    holder.on('error', (e: NodeJS.ErrnoException) =>
      settle(e.code === 'ENOENT' ? { kind: 'no-flock' } : { kind: 'failed', reason: e.message }),
    );
    // 'close', not 'exit': by then stderr has been read to its end.
    holder.on('close', (code, signal) => {
      if (code === 127)
        settle({ kind: 'no-flock' }); // the shell found no such command
      else if (code === 1 && err.trim() === '') settle({ kind: 'busy' });
      else settle({ kind: 'failed', reason: err.trim() || `the lock's shell exited with ${signal ?? code}` });
    });
  });
}

/** Lets the holder outlive nothing: it keeps neither this process's event loop alive nor its stdin pipe's. */
function unrefHolder(holder: ChildProcess): void {
  holder.unref();
  for (const stream of [holder.stdin, holder.stdout, holder.stderr]) {
    (stream as unknown as { unref?: () => void } | null)?.unref?.();
  }
}

function endHolder(holder: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (holder.exitCode !== null || holder.signalCode !== null) return done();
    holder.once('exit', () => done());
    holder.ref(); // waited for: this process stays until the lock is free
    holder.stdin!.end();
  });
}

/** Without a flock command: a pid file, whose limits the log says. */
function pidFileFallback(dir: string, log: (m: string) => void): DataDirLock {
  log(
    `No flock command found: the lock on DATA_DIR ${dir} falls back to a pid file (${PID_FILE}), ` +
      'which cannot see an owner in another container (pid namespace) or on another host. ' +
      'Install util-linux (or busybox) for a lock that can.',
  );
  const lock = lockDataDirWithPidFile(dir);
  return { path: lock.path, kind: 'pid-file', release: async () => lock.release() };
}

/** Why a lost lock could not be taken again. */
function whyNotRetaken(dir: string, path: string, again: Exclude<Attempt, { kind: 'held' }>): string {
  return again.kind === 'busy'
    ? new DataDirInUseError(dir, readOwner(path)).message
    : `the lock on DATA_DIR ${dir} cannot be taken again (${again.kind === 'failed' ? again.reason : 'no flock command'})`;
}

export async function lockDataDir(dirName: string, options: LockOptions = {}): Promise<DataDirLock> {
  const dir = resolve(dirName);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, LOCK_FILE);
  const log = options.log ?? ((m: string) => void process.stderr.write(`${m}\n`));
  const command = options.flockCommand ?? 'flock';

  const first = await tryHold(path, command);
  if (first.kind === 'no-flock') return pidFileFallback(dir, log);
  if (first.kind === 'busy') throw new DataDirInUseError(dir, readOwner(path));
  if (first.kind === 'failed') throw new Error(`Cannot lock DATA_DIR ${dir} (${path}): ${first.reason}`);

  let holder = first.holder;
  let released = false;
  writeOwner(path);
  // A pid file of an earlier version is not a lock any more.
  rmSync(join(dir, PID_FILE), { force: true });

  const watch = (h: ChildProcess): void => {
    unrefHolder(h);
    h.once('exit', (code, signal) => {
      if (released) return;
      // Someone killed the holder: the directory is unlocked while we still write it.
      // Take it again; if another process was faster, stop before writing anything more.
      log(`The lock on DATA_DIR ${dir} was lost (its holder process ended with ${signal ?? code}); taking it again`);
      void tryHold(path, command).then((again) => {
        if (released) {
          if (again.kind === 'held') again.holder.stdin!.end();
          return;
        }
        if (again.kind === 'held') {
          holder = again.holder;
          writeOwner(path);
          watch(holder);
          return;
        }
        log(`${whyNotRetaken(dir, path, again)}: this process stops now, without writing to it`);
        process.exit(1);
      });
    });
  };
  watch(holder);

  return {
    path,
    kind: 'flock',
    release: async () => {
      if (released) return;
      released = true;
      await endHolder(holder);
    },
  };
}
