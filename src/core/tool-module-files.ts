/**
 * Finding tool modules on disk for the registry (src/core/tool-registry.ts):
 * the module files of one directory (a file, or a directory's index), and
 * forgetting the cached modules under the tool directories before a reload.
 */
import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { byName, isRecord } from './tool-module';

const MODULE_FILE = /\.(js|cjs|ts)$/;
const INDEX_FILES = ['index.js', 'index.cjs', 'index.ts'];

/** Names starting with `_` or `.` are private helpers, tests are not tools. */
function isHidden(name: string): boolean {
  return name.startsWith('_') || name.startsWith('.') || name === 'node_modules';
}

function isModuleFileName(name: string): boolean {
  return MODULE_FILE.test(name) && !name.endsWith('.d.ts') && !/\.(test|spec)\./.test(name);
}

async function entryKind(dir: string, entry: Dirent): Promise<'file' | 'dir' | 'other'> {
  if (entry.isFile()) return 'file';
  if (entry.isDirectory()) return 'dir';
  if (!entry.isSymbolicLink()) return 'other';
  try {
    const target = await stat(join(dir, entry.name));
    return target.isFile() ? 'file' : target.isDirectory() ? 'dir' : 'other';
  } catch {
    return 'other'; // a dangling link is not a module
  }
}

async function findIndex(dir: string): Promise<string | undefined> {
  for (const name of INDEX_FILES) {
    const file = join(dir, name);
    const found = await stat(file).then(
      (s) => s.isFile(),
      () => false,
    );
    if (found) return file;
  }
  return undefined;
}

/** Module files of one directory, sorted so that load order (and duplicate resolution) is stable. */
export async function findModuleFiles(dir: string): Promise<string[]> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort(byName);
  const files: string[] = [];
  for (const entry of entries) {
    if (isHidden(entry.name)) continue;
    const kind = await entryKind(dir, entry);
    if (kind === 'file' && isModuleFileName(entry.name)) files.push(join(dir, entry.name));
    if (kind === 'dir') {
      const index = await findIndex(join(dir, entry.name));
      if (index) files.push(index);
    }
  }
  return files;
}

/**
 * Forget the modules under the tool directories so that the next require()
 * reads them from disk again (plain Node caches them forever). Their
 * dependencies in node_modules and the tool interface itself stay cached, so
 * ToolError keeps one identity across reloads.
 */
export function evictModuleCache(dirs: readonly string[]): void {
  for (const key of Object.keys(require.cache)) {
    if (key.includes(`${sep}node_modules${sep}`)) continue;
    if (dirs.some((dir) => key.startsWith(dir + sep))) delete require.cache[key];
  }
}

/** A tool directory that is not there (or not a directory). */
export function isMissingDir(err: unknown): boolean {
  return isRecord(err) && (err.code === 'ENOENT' || err.code === 'ENOTDIR');
}
