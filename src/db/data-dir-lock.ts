/**
 * One process owns an embedded DATA_DIR. PGlite keeps no lock of its own, and
 * two processes writing one data directory each believe they own it: writes
 * acknowledged by one vanish when the other flushes its state. The owner's pid
 * is written to `DATA_DIR/owner.pid`, created exclusively; a second process
 * finds it, sees the owner alive and refuses to start.
 *
 * A lock left by a process that died without cleaning up (kill -9, a crash)
 * names a pid that no longer runs: it is taken over. A pid equal to our own
 * is stale too (a container restarted with the same volume runs as pid 1 again).
 */
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export class DataDirInUseError extends Error {
  constructor(
    public readonly dir: string,
    public readonly ownerPid: number,
  ) {
    super(`DATA_DIR ${dir} is in use by process ${ownerPid}; stop it first, or give this process another DATA_DIR`);
    this.name = 'DataDirInUseError';
  }
}

export interface DataDirLock {
  readonly path: string;
  release(): void;
}

const LOCK_FILE = 'owner.pid';

/** Directories this process holds: a second open from this process is refused too. */
const held = new Set<string>();

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

function tryCreate(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    writeSync(fd, `${process.pid}\n`);
  } finally {
    closeSync(fd);
  }
  return true;
}

export function lockDataDir(dir: string): DataDirLock {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, LOCK_FILE);
  if (held.has(path)) throw new DataDirInUseError(dir, process.pid);
  // Two rounds: a stale lock is moved aside, then the exclusive create is retried once.
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
    if (owner !== undefined && owner !== process.pid && isAlive(owner)) throw new DataDirInUseError(dir, owner);
    // Stale: move it aside under a name of our own (atomic), so that of two
    // processes taking over at once only one removes it; then retry the create.
    const aside = `${path}.stale-${process.pid}`;
    try {
      renameSync(path, aside);
      rmSync(aside, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  const owner = readOwner(path);
  throw new DataDirInUseError(dir, owner ?? 0);
}
