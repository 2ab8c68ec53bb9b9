/**
 * Exports a resource as JSON or CSV text, and (execute level) writes it to a
 * file under EXPORT_DIR. The file write is the one place a tool touches the
 * file system, so the path is treated as hostile: it must stay inside the
 * export directory whatever the caller or a planted symbolic link tries.
 */
import { constants } from 'node:fs';
import { lstat, mkdir, open, realpath, type FileHandle } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import { z } from 'zod';
import { ToolError, ZResourceName, defineAction, defineTool, requireResource } from '../src/core/tool-interface';

export const EXPORT_FORMATS = ['json', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

type JsonObject = Record<string, unknown>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(message: string): ToolError {
  return new ToolError('invalid_args', message);
}

// ---- CSV (RFC 4180) -------------------------------------------------------------

function cellText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'object' && value !== null) return JSON.stringify(value); // nested values stay readable
  return ''; // null, and nothing else occurs in JSON data
}

/** One CSV field: quoted when it holds a quote, comma or line break, quotes doubled. */
export function csvField(value: unknown): string {
  const text = cellText(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function csvLines(rows: readonly (readonly unknown[])[]): string {
  // RFC 4180 separates records with CRLF; the last line ends with one too.
  return rows.map((row) => `${row.map(csvField).join(',')}\r\n`).join('');
}

/** Header: every key of every row, in order of first appearance. */
function unionOfKeys(rows: readonly JsonObject[]): string[] {
  const keys = new Set<string>();
  for (const row of rows) for (const key of Object.keys(row)) keys.add(key);
  return [...keys];
}

/**
 * CSV of an array of objects (header = union of their keys), of an array of
 * scalars (one `value` column) or of a single object (one row).
 */
export function toCsv(data: unknown): string {
  const rows: unknown = isObject(data) ? [data] : data;
  if (!Array.isArray(rows)) throw invalid('CSV export needs an array or an object');
  if (rows.length === 0) return '';
  const objects = rows.filter(isObject);
  if (objects.length === rows.length) {
    const header = unionOfKeys(objects);
    return csvLines([header, ...objects.map((row) => header.map((key) => row[key]))]);
  }
  if (rows.every((item) => item === null || typeof item !== 'object')) {
    return csvLines([['value'], ...rows.map((item: unknown) => [item])]);
  }
  throw invalid('CSV export needs an array of objects or an array of scalar values, not a mix');
}

export function exportContent(data: unknown, format: ExportFormat): string {
  return format === 'csv' ? toCsv(data) : JSON.stringify(data, null, 2);
}

// ---- Safe writing under the export directory ------------------------------------

/** The path's segments; refuses anything that could name a file outside the export directory. */
export function exportPathSegments(path: string): string[] {
  if (path.includes('\0')) throw invalid('path must not contain NUL bytes');
  // Backslashes and drive letters mean something else on Windows: refuse them everywhere.
  if (isAbsolute(path) || path.includes('\\') || /^[A-Za-z]:/.test(path)) {
    throw invalid('path must be relative to the export directory, with "/" separators');
  }
  const segments = path.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) throw invalid('path must not contain ".." segments');
  if (segments.length === 0 || path.endsWith('/')) throw invalid('path must name a file');
  return segments;
}

function errorCode(err: unknown): unknown {
  return isObject(err) ? err.code : undefined;
}

/** Walks (and creates) the directories one by one, so no symbolic link is ever followed. */
async function ensureDirectories(root: string, segments: readonly string[]): Promise<string> {
  let current = root;
  for (const segment of segments) {
    current = join(current, segment);
    const info = await lstat(current).catch((err: unknown) => {
      if (errorCode(err) === 'ENOENT') return undefined;
      throw err;
    });
    if (!info) await mkdir(current);
    else if (info.isSymbolicLink()) throw invalid(`path must not go through a symbolic link (${segment})`);
    else if (!info.isDirectory()) throw invalid(`path component "${segment}" is not a directory`);
  }
  return current;
}

/** Belt and braces after the walk: the real parent must still be inside the real export root. */
async function assertInside(root: string, dir: string): Promise<void> {
  const rel = relative(root, await realpath(dir));
  if (rel.startsWith('..') || isAbsolute(rel)) throw invalid('path resolves outside the export directory');
}

async function openNoFollow(file: string): Promise<FileHandle> {
  // O_NOFOLLOW refuses a link planted as the file itself; O_NONBLOCK keeps a FIFO from hanging the call.
  const flags = constants.O_WRONLY | constants.O_CREAT | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);
  try {
    return await open(file, flags, 0o644);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ELOOP' || code === 'EMLINK') throw invalid('path must not be a symbolic link');
    if (code === 'EISDIR') throw invalid('path names a directory');
    if (code === 'ENXIO') throw invalid('path must name a regular file');
    throw err;
  }
}

async function writeContent(file: string, content: string): Promise<number> {
  const handle = await openNoFollow(file);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw invalid('path must name a regular file');
    // A hard link would let the write land in a file that also lives outside the directory.
    if (info.nlink > 1) throw invalid('path must not be a hard link');
    await handle.truncate(0);
    await handle.writeFile(content, 'utf8');
    return Buffer.byteLength(content, 'utf8');
  } finally {
    await handle.close();
  }
}

/** Writes `content` to `path` under `exportDir` (created as needed); returns the normalized relative path. */
export async function writeExportFile(
  exportDir: string,
  path: string,
  content: string,
): Promise<{ path: string; bytes: number }> {
  const segments = exportPathSegments(path);
  await mkdir(exportDir, { recursive: true });
  const root = await realpath(exportDir);
  const parent = await ensureDirectories(root, segments.slice(0, -1));
  await assertInside(root, parent);
  const bytes = await writeContent(join(parent, segments[segments.length - 1]!), content);
  return { path: segments.join('/'), bytes };
}

const ZFormat = z.enum(EXPORT_FORMATS).describe('json (pretty-printed) or csv (RFC 4180)');

export default defineTool({
  name: 'export-tool',
  version: '1.0.0',
  description: 'Exports resources as JSON or CSV, as text or as a file in the export directory.',
  actions: {
    'export-resource': defineAction({
      description:
        'Return the data of resource `name` as JSON or CSV text. CSV needs an array of objects (header: all their keys), ' +
        'an array of scalars, or one object.',
      level: 1,
      input: z.object({ name: ZResourceName, format: ZFormat }),
      prefetch: ({ name }) => name,
      handler: async ({ name, format }, ctx) => {
        const resource = await requireResource(ctx.sharedContext, name);
        return { name, format, content: exportContent(resource.data, format) };
      },
    }),
    'write-export': defineAction({
      description:
        'Write resource `name` as JSON or CSV to the file `path`, relative to the server export directory ' +
        '(no absolute paths, no "..", no symbolic links). Overwrites an existing file.',
      level: 3,
      input: z.object({
        name: ZResourceName,
        format: ZFormat,
        path: z
          .string()
          .min(1)
          .max(1024)
          .describe('File path relative to the export directory, e.g. reports/sales.csv'),
      }),
      handler: async ({ name, format, path }, ctx) => {
        const resource = await requireResource(ctx.sharedContext, name);
        const written = await writeExportFile(ctx.exportDir, path, exportContent(resource.data, format));
        return { name, format, ...written };
      },
    }),
  },
});
