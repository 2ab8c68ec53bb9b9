/**
 * The fallback DATA_DIR lock where no `flock` command exists (see
 * data-dir-lock.ts): the owner's pid in `DATA_DIR/owner.pid`, created
 * exclusively; a second process finds it, sees the owner alive and refuses.
 *
 * It only sees processes of its own pid namespace on its own host. A lock
 * left by a process that died without cleaning up (kill -9, a crash) names a
 * pid that no longer runs: it is taken over. A pid equal to our own is stale
 * too (a container restarted with the same volume runs as pid 1 again), which
 * is also why two containers on one volume cannot see each other with it.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { DataDirInUseError } from './data-dir-in-use';

export interface PidFileLock {
  readonly path: string;
  release(): void;
}

export const PID_FILE = 'owner.pid';

/** Directories this process holds: a second open from this process is refused too. */
const held = new Set<string>();

function inUse(dir: string, pid: number): DataDirInUseError {
  return new DataDirInUseError(dir, { pid, host: hostname() });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8').trim(), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined; // gone meanwhile, or unreadable: treated as stale
  }
}

/**
 * Creates the lock with its content in one step: the pid is written to a
 * private temporary file, which is then hard-linked to the lock's name (link
 * fails with EEXIST when the name is taken). A reader therefore never sees an
 * empty or half-written lock, which it would take for a stale one.
 */
function tryCreate(path: string): boolean {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(tmp, `${process.pid}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(tmp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    rmSync(tmp, { force: true });
  }
}

/**
 * Moves a lock judged stale (its owner `dead` is gone) out of the way. Between
 * the judgement and the move, another process may have taken the stale lock
 * over and written its own: then the moved file is not the stale one, and it
 * is put back and its owner reported.
 */
export function removeStale(dir: string, path: string, dead: number | undefined): void {
  const aside = `${path}.stale-${process.pid}-${randomBytes(6).toString('hex')}`;
  try {
    renameSync(path, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return; // someone else removed it
    throw err;
  }
  const moved = readOwner(aside);
  if (moved !== dead && moved !== undefined && moved !== process.pid && isAlive(moved)) {
    try {
      linkSync(aside, path);
    } catch {
      // yet another process holds the name now; it will judge for itself
    }
    rmSync(aside, { force: true });
    throw inUse(dir, moved);
  }
  rmSync(aside, { force: true });
}

export function lockDataDirWithPidFile(dir: string): PidFileLock {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, PID_FILE);
  if (held.has(path)) throw inUse(dir, process.pid);
  // A few rounds: a stale lock is moved aside, then the exclusive create is retried.
  for (let attempt = 0; attempt < 3; attempt++) {
    if (tryCreate(path)) {
      held.add(path);
      const release = (): void => {
        if (!held.delete(path)) return;
        if (readOwner(path) === process.pid) rmSync(path, { force: true });
        process.removeListener('exit', release);
      };
      // An exit without close (an uncaught error) still frees the directory.
      process.on('exit', release);
      return { path, release };
    }
    const owner = readOwner(path);
    if (owner !== undefined && owner !== process.pid && isAlive(owner)) throw inUse(dir, owner);
    removeStale(dir, path, owner);
  }
  throw inUse(dir, readOwner(path) ?? 0);
}
