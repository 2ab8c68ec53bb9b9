/** Temporary directories for one test file: a TOOLS_DIR with modules in it, an EXPORT_DIR, a work area. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface ScratchDir {
  readonly path: string;
  /** The path of `name` inside the directory. */
  file(name: string): string;
  /** Writes `source` to `name` and returns its path. */
  write(name: string, source: string): string;
  remove(): void;
}

/** A fresh directory under the system's temp dir, holding `files` (name -> content). */
export function scratchDir(label: string, files: Record<string, string> = {}): ScratchDir {
  const path = mkdtempSync(join(tmpdir(), `${label}-`));
  const dir: ScratchDir = {
    path,
    file: (name) => join(path, name),
    write: (name, source) => {
      writeFileSync(join(path, name), source);
      return join(path, name);
    },
    remove: () => rmSync(path, { recursive: true, force: true }),
  };
  for (const [name, source] of Object.entries(files)) dir.write(name, source);
  return dir;
}
