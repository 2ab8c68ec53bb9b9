/** Who holds a DATA_DIR, and the error a second process gets. */

export interface DataDirOwner {
  pid: number;
  host: string;
  /** When it took the directory (unknown for the pid-file fallback). */
  since?: string;
}

function describe(owner: DataDirOwner | undefined): string {
  if (!owner) return 'another process';
  return `process ${owner.pid} on host ${owner.host}${owner.since ? ` (since ${owner.since})` : ''}`;
}

export class DataDirInUseError extends Error {
  constructor(
    public readonly dir: string,
    public readonly owner: DataDirOwner | undefined,
  ) {
    super(`DATA_DIR ${dir} is in use by ${describe(owner)}; stop it first, or give this process another DATA_DIR`);
    this.name = 'DataDirInUseError';
  }
}
