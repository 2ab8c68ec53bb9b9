/**
 * export-tool's file writing on the real file system: each conversation in
 * its own directory, symbolic links refused, a directory swapped for a link
 * while the export runs, and the per-conversation file cap.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeExportFile } from '../../tools/export-tool';

let work: string;
let exportDir: string;
let outside: string;

beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'export-files-'));
  exportDir = join(work, 'exports');
  outside = join(work, 'outside');
  await mkdir(outside);
});
afterEach(() => rm(work, { recursive: true, force: true }));

it('conversation ids, ":" included, are single directory names: two conversations never share a file', async () => {
  await writeExportFile(exportDir, 'team:a_1-x', 'out/report.json', '"a"');
  await writeExportFile(exportDir, 'team:b', 'out/report.json', '"b"');

  expect((await readdir(exportDir)).sort()).toEqual(['team:a_1-x', 'team:b']);
  await expect(readFile(join(exportDir, 'team:a_1-x', 'out', 'report.json'), 'utf8')).resolves.toBe('"a"');
  await expect(readFile(join(exportDir, 'team:b', 'out', 'report.json'), 'utf8')).resolves.toBe('"b"');
});

it.each(['..', '.', 'a/b', ''])('refuses %j as a conversation directory', async (id) => {
  await expect(writeExportFile(exportDir, id, 'x.json', '1')).rejects.toThrow(/safe directory name/);
  expect(existsSync(join(work, 'x.json'))).toBe(false);
});

it("a link planted as the conversation's directory fails cleanly, nothing written outside", async () => {
  await mkdir(exportDir);
  await symlink(outside, join(exportDir, 'conv-1'));

  await expect(writeExportFile(exportDir, 'conv-1', 'x.json', '1')).rejects.toMatchObject({
    code: 'invalid_args',
    message: expect.stringMatching(/symbolic links are refused/),
  });
  expect(await readdir(outside)).toEqual([]);
});

it('a directory swapped for a link after it was opened: the write still lands in the opened directory', async () => {
  const moved = join(work, 'moved');
  const written = await writeExportFile(exportDir, 'conv-1', 'sub/x.json', '"held"', {
    beforeWrite: async () => {
      // The path now leads outside; the descriptor still names the original directory.
      await rename(join(exportDir, 'conv-1'), moved);
      await symlink(outside, join(exportDir, 'conv-1'));
    },
  });

  expect(written).toEqual({ path: 'sub/x.json', bytes: 6 });
  expect(await readdir(outside)).toEqual([]);
  await expect(readFile(join(moved, 'sub', 'x.json'), 'utf8')).resolves.toBe('"held"');
});

it('a subdirectory swapped for a link after it was opened: nothing is written outside', async () => {
  const written = writeExportFile(exportDir, 'conv-1', 'sub/x.json', '1', {
    beforeWrite: async () => {
      await rename(join(exportDir, 'conv-1', 'sub'), join(work, 'moved-sub'));
      await symlink(outside, join(exportDir, 'conv-1', 'sub'));
    },
  });

  await expect(written).resolves.toMatchObject({ path: 'sub/x.json' });
  expect(await readdir(outside)).toEqual([]);
  expect(await readdir(join(work, 'moved-sub'))).toEqual(['x.json']);
});

it('at the file cap a new name is refused with invalid_args, an existing file can still be replaced', async () => {
  const convDir = join(exportDir, 'conv-1');
  await mkdir(join(convDir, 'old'), { recursive: true });
  for (const name of ['a.json', 'b.json', 'old/c.json']) await writeFile(join(convDir, name), 'x');

  await expect(writeExportFile(exportDir, 'conv-1', 'd.json', '1', { maxFiles: 3 })).rejects.toMatchObject({
    code: 'invalid_args',
    message: expect.stringMatching(/already has 3 export files/),
  });
  await expect(writeExportFile(exportDir, 'conv-1', 'new/d.json', '1', { maxFiles: 3 })).rejects.toMatchObject({
    code: 'invalid_args',
  });
  expect(existsSync(join(convDir, 'new'))).toBe(false); // nothing created on the way to a refusal

  await expect(writeExportFile(exportDir, 'conv-1', 'old/c.json', '"new"', { maxFiles: 3 })).resolves.toBeDefined();
  await expect(readFile(join(convDir, 'old', 'c.json'), 'utf8')).resolves.toBe('"new"');
  // Another conversation has its own count.
  await expect(writeExportFile(exportDir, 'conv-2', 'd.json', '1', { maxFiles: 3 })).resolves.toBeDefined();
});

it('leaves no temporary file behind', async () => {
  await writeExportFile(exportDir, 'conv-1', 'x.json', '1');
  await writeExportFile(exportDir, 'conv-1', 'x.json', '2');
  expect(await readdir(join(exportDir, 'conv-1'))).toEqual(['x.json']);
});
