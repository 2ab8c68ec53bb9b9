/**
 * Exports a resource as JSON or CSV text, and (execute level) writes it to a
 * file under EXPORT_DIR. The file write is the one place a tool touches the
 * file system, so the path is treated as hostile: it must stay inside the
 * conversation's own export directory whatever the caller or a symbolic link
 * planted (or swapped in while the export runs) tries.
 */
import { randomBytes } from 'node:crypto';
import { constants, existsSync, type Stats } from 'node:fs';
import { type FileHandle, lstat, mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { z } from 'zod';
import {
  ToolError,
  ZResourceName,
  defineAction,
  defineTool,
  isValidId,
  requireResource,
} from '../src/core/tool-interface';

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
//
// Each conversation writes under EXPORT_DIR/<conversationId>/ only. Conversation
// ids follow the id rule (isValidId, src/core/resource-names.ts): never "/", NUL, "." or "..", at most 128
// bytes, so one is always a single, ordinary directory name on Linux (":" too).
//
// A check of a path followed by a write to the same path is a race: a directory
// swapped for a symbolic link in between redirects the write. So each directory
// is opened once, with O_DIRECTORY|O_NOFOLLOW, relative to the descriptor of its
// parent, and the file is created relative to the last descriptor. Node has no
// openat(); on Linux "/proc/self/fd/<fd>/<name>" is its equivalent: the kernel
// resolves /proc/self/fd/<fd> to the open directory itself, not to the path it
// was opened by, so renaming or replacing that path afterwards changes nothing.

/** Subdirectories allowed in an export path below the conversation's directory. */
export const EXPORT_MAX_DEPTH = 4;
/** Files one conversation may keep under EXPORT_DIR; replacing one of them is always allowed. */
export const EXPORT_MAX_FILES = 1000;
/** Linux NAME_MAX: a longer name fails in the kernel with ENAMETOOLONG. */
const NAME_MAX_BYTES = 255;
/** The content is written to a temporary file first, then renamed over the name. */
const TEMP_PREFIX = '.export-tmp-';
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** The path's segments; refuses anything that could name a file outside the conversation's directory. */
export function exportPathSegments(path: string): string[] {
  if (path.includes('\0')) throw invalid('path must not contain NUL bytes');
  // Backslashes and drive letters mean something else on Windows: refuse them everywhere.
  if (isAbsolute(path) || path.includes('\\') || /^[A-Za-z]:/.test(path)) {
    throw invalid('path must be relative to the export directory, with "/" separators');
  }
  const segments = path.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) throw invalid('path must not contain ".." segments');
  if (segments.length === 0 || path.endsWith('/')) throw invalid('path must name a file');
  if (segments.some((s) => Buffer.byteLength(s, 'utf8') > NAME_MAX_BYTES)) {
    throw invalid(`path: each file or directory name must be at most ${NAME_MAX_BYTES} bytes`);
  }
  if (segments.length - 1 > EXPORT_MAX_DEPTH) {
    throw invalid(`path must not nest more than ${EXPORT_MAX_DEPTH} directories`);
  }
  if (segments.some((s) => s.startsWith(TEMP_PREFIX))) throw invalid(`path names must not start with ${TEMP_PREFIX}`);
  return segments;
}

function errorCode(err: unknown): unknown {
  return isObject(err) ? err.code : undefined;
}

/** `name` inside the directory open as `dir`, whatever its path is now. */
function at(dir: FileHandle, name = ''): string {
  return `/proc/self/fd/${dir.fd}/${name}`;
}

/** Opens (creating it when asked) the directory `name` inside `parent`; undefined when missing and not created. */
async function openChildDir(parent: FileHandle, name: string, create: boolean): Promise<FileHandle | undefined> {
  if (create) {
    // mkdir never follows a link at its last component: a planted link is EEXIST, then refused below.
    await mkdir(at(parent, name), 0o755).catch((err: unknown) => {
      if (errorCode(err) !== 'EEXIST') throw err;
    });
  }
  try {
    return await open(at(parent, name), DIR_FLAGS);
  } catch (err) {
    const code = errorCode(err);
    if (code === 'ENOENT' && !create) return undefined;
    // O_NOFOLLOW|O_DIRECTORY on a symbolic link fails with ELOOP or ENOTDIR.
    if (code === 'ELOOP' || code === 'ENOTDIR') {
      throw invalid(`"${name}" in the export path is not a directory (symbolic links are refused)`);
    }
    throw err;
  }
}

async function entryAt(dir: FileHandle, name: string): Promise<Stats | undefined> {
  return lstat(at(dir, name)).catch((err: unknown) => {
    if (errorCode(err) === 'ENOENT') return undefined;
    throw err;
  });
}

/** Files under the conversation's directory; readdir reports links as links, so none is followed. */
async function countFiles(dir: FileHandle): Promise<number> {
  const entries = await readdir(at(dir), { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile() && !e.name.startsWith(TEMP_PREFIX)).length;
}

/**
 * Writes `content` to a new temporary file in `dir`, then renames it over
 * `name`. The rename replaces the directory entry: it never writes through a
 * symbolic link or into a hard-linked file planted at `name`, and readers see
 * the old file or the new one, never half of it.
 */
async function replaceFile(dir: FileHandle, name: string, content: string): Promise<number> {
  const existing = await entryAt(dir, name);
  // Refused for a clear answer; the rename below would be safe regardless.
  if (existing?.isSymbolicLink()) throw invalid('path must not be a symbolic link');
  if (existing?.isDirectory()) throw invalid('path names a directory');
  if (existing && !existing.isFile()) throw invalid('path must name a regular file');
  if (existing && existing.nlink > 1) throw invalid('path must not be a hard link');
  const temp = `${TEMP_PREFIX}${randomBytes(8).toString('hex')}`;
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  try {
    const handle = await open(at(dir, temp), flags, 0o644);
    try {
      await handle.writeFile(content, 'utf8');
    } finally {
      await handle.close();
    }
    await rename(at(dir, temp), at(dir, name));
  } catch (err) {
    await unlink(at(dir, temp)).catch(() => undefined);
    if (errorCode(err) === 'EISDIR') throw invalid('path names a directory');
    throw err;
  }
  return Buffer.byteLength(content, 'utf8');
}

export interface ExportOptions {
  /** At most this many files per conversation (default EXPORT_MAX_FILES). */
  maxFiles?: number;
  /** Test seam: runs after every directory is open, before the file is written. */
  beforeWrite?: () => Promise<void>;
}

/**
 * Writes `content` to `path` under `exportDir/<conversationId>/` (directories
 * created as needed); returns the normalized path, relative to that directory.
 */
export async function writeExportFile(
  exportDir: string,
  conversationId: string,
  path: string,
  content: string,
  options: ExportOptions = {},
): Promise<{ path: string; bytes: number }> {
  const segments = exportPathSegments(path);
  const fileName = segments[segments.length - 1]!;
  if (!isValidId(conversationId)) throw new Error('conversation id is not a safe directory name');
  // Fail closed where there is no /proc openat equivalent (not Linux).
  if (!existsSync('/proc/self/fd')) throw new Error('write-export needs Linux (/proc/self/fd)');
  await mkdir(exportDir, { recursive: true });
  // EXPORT_DIR itself is the operator's choice: trusted, and may be reached through links.
  const opened: FileHandle[] = [await open(exportDir, constants.O_RDONLY | constants.O_DIRECTORY)];
  const last = (): FileHandle => opened[opened.length - 1]!;
  try {
    opened.push((await openChildDir(last(), conversationId, true))!);
    const full = (await countFiles(last())) >= (options.maxFiles ?? EXPORT_MAX_FILES);
    // When full, only an existing file may be replaced: nothing is created on the way there.
    for (const segment of segments.slice(0, -1)) {
      const dir = await openChildDir(last(), segment, !full);
      if (!dir) throw tooMany(options.maxFiles);
      opened.push(dir);
    }
    if (full && !(await entryAt(last(), fileName))) throw tooMany(options.maxFiles);
    await options.beforeWrite?.();
    const bytes = await replaceFile(last(), fileName, content);
    return { path: segments.join('/'), bytes };
  } finally {
    await Promise.all(opened.map((handle) => handle.close()));
  }
}

function tooMany(maxFiles = EXPORT_MAX_FILES): ToolError {
  return invalid(`this conversation already has ${maxFiles} export files (the limit); overwrite one instead`);
}

const ZFormat = z.enum(EXPORT_FORMATS).describe('json (pretty-printed) or csv (RFC 4180)');
const ZExportFormat = z.enum(EXPORT_FORMATS);

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
      output: z.object({ name: z.string(), format: ZExportFormat, content: z.string().describe('The exported text') }),
      requires: [{ resource: '{name}' }],
      prefetch: ({ name }) => name,
      handler: async ({ name, format }, ctx) => {
        const resource = await requireResource(ctx.sharedContext, name);
        return { name, format, content: exportContent(resource.data, format) };
      },
    }),
    'write-export': defineAction({
      description:
        "Write resource `name` as JSON or CSV to the file `path`, relative to this conversation's own export " +
        'directory (EXPORT_DIR/<conversationId>/): no absolute paths, no "..", no symbolic links, names of at most ' +
        `255 bytes, at most ${EXPORT_MAX_DEPTH} subdirectories, at most ${EXPORT_MAX_FILES} files per conversation. ` +
        'Replaces an existing file.',
      level: 3,
      input: z.object({
        name: ZResourceName,
        format: ZFormat,
        path: z
          .string()
          .min(1)
          .max(1024)
          .describe("File path relative to the conversation's export directory, e.g. reports/sales.csv"),
      }),
      output: z.object({
        name: z.string(),
        format: ZExportFormat,
        path: z.string().describe("The file written, relative to the conversation's export directory"),
        bytes: z.number().int().describe('Its size'),
      }),
      requires: [{ resource: '{name}' }],
      handler: async ({ name, format, path }, ctx) => {
        exportPathSegments(path); // a bad path is invalid_args before anything is read or created
        const resource = await requireResource(ctx.sharedContext, name);
        const written = await writeExportFile(
          ctx.exportDir,
          ctx.conversationId,
          path,
          exportContent(resource.data, format),
        );
        return { name, format, ...written };
      },
    }),
  },
});
