/**
 * write-export through negotiate: files land in the conversation's own
 * directory under EXPORT_DIR, bad names are 400 invalid_args (never 500), and
 * a planted link is refused with nothing written outside.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import type supertest from 'supertest';
import { request } from '../support/auth';
import { type TestApp, createTestApp } from '../support/test-app';
import { uniqueId } from '../support/ids';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';

let t: TestApp;
let work: ScratchDir;
let exportDir: string;

beforeAll(async () => {
  work = scratchDir('export-http');
  exportDir = work.file('exports');
  t = await createTestApp({ EXPORT_DIR: exportDir });
});

afterAll(async () => {
  await t?.close();
  work?.remove();
});

function neg(conversationId: string, body: Record<string, unknown>): supertest.Test {
  return request(t.app).post(`/conversations/${conversationId}/negotiate`).send(body);
}

async function conversationWith(data: unknown): Promise<string> {
  const c = uniqueId('exp:');
  await request(t.app).put(`/conversations/${c}/resources/doc`).send({ data }).expect(201);
  expect((await neg(c, { action: 'upgrade:export-tool:level-3' })).status).toBe(200);
  return c;
}

function writeExport(c: string, path: string): supertest.Test {
  return neg(c, { action: 'export-tool/write-export', args: { name: 'doc', format: 'json', path } });
}

it('two conversations exporting the same file name each get their own file', async () => {
  const first = await conversationWith({ from: 'first' });
  const second = await conversationWith({ from: 'second' });

  const [a, b] = await Promise.all([writeExport(first, 'report.json'), writeExport(second, 'report.json')]);

  expect([a.status, b.status]).toEqual([200, 200]);
  expect(a.body.output).toMatchObject({ path: 'report.json' });
  expect(JSON.parse(readFileSync(join(exportDir, first, 'report.json'), 'utf8'))).toEqual({ from: 'first' });
  expect(JSON.parse(readFileSync(join(exportDir, second, 'report.json'), 'utf8'))).toEqual({ from: 'second' });
});

it.each([
  ['a file name over 255 bytes', (): string => `${'a'.repeat(256)}.json`],
  ['a directory name over 255 bytes', (): string => `${'d'.repeat(300)}/x.json`],
  ['too many directories', (): string => 'a/b/c/d/e/x.json'],
])('%s is 400 invalid_args, nothing written', async (_label, makePath) => {
  const c = await conversationWith([1]);
  const res = await writeExport(c, makePath());

  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ success: false, code: 'invalid_args' });
  expect(res.body.error).not.toContain(exportDir);
  expect(existsSync(join(exportDir, c))).toBe(false);
});

it("a link planted as the conversation's directory: 400 invalid_args, nothing written outside", async () => {
  const c = await conversationWith([1]);
  const outside = mkdtempSync(work.file('outside-'));
  mkdirSync(exportDir, { recursive: true });
  symlinkSync(outside, join(exportDir, c));

  const res = await writeExport(c, 'x.json');

  expect(res.status).toBe(400);
  expect(res.body).toMatchObject({ success: false, code: 'invalid_args' });
  expect(res.body.error).not.toContain(outside);
  expect(readdirSync(outside)).toEqual([]);
});
