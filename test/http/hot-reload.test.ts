/**
 * TOOLS_DIR with TOOLS_HOT_RELOAD: a tool file added at run time appears in
 * GET /tools and routes through negotiate; removed, it is gone and its
 * action no longer routes. Waits on the registry's 'change' event, never on
 * a timer.
 */
import { unlinkSync, writeFileSync } from 'node:fs';
import type supertest from 'supertest';
import { request } from '../support/auth';
import type { ToolSet } from '../../src/core/tool-registry';
import { type TestApp, createTestApp } from '../support/test-app';
import { uniqueId } from '../support/ids';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { shoutToolModule } from '../support/fixtures';

const HOT_TOOL = shoutToolModule('hot-tool', 'Added while the service runs');

let t: TestApp;
let toolsDir: ScratchDir;

beforeAll(async () => {
  toolsDir = scratchDir('hot-reload-tools');
  t = await createTestApp({ TOOLS_DIR: toolsDir.path, TOOLS_HOT_RELOAD: 'true' });
});

afterAll(async () => {
  await t?.close();
  toolsDir?.remove();
});

/**
 * Resolves on the first 'change' whose tool set satisfies `done` (editors and
 * file systems may report a write as several events, hence possibly several
 * reloads). Jest's test timeout bounds the wait.
 */
function changeUntil(done: (set: ToolSet) => boolean): Promise<ToolSet> {
  return new Promise((resolve) => {
    const onChange = (set: ToolSet): void => {
      if (!done(set)) return;
      t.registry.off('change', onChange);
      resolve(set);
    };
    t.registry.on('change', onChange);
  });
}

async function toolNames(): Promise<string[]> {
  const res = await request(t.app).get('/tools').expect(200);
  return (res.body.tools as { name: string }[]).map((x) => x.name);
}

function neg(conversationId: string, body: Record<string, unknown>): supertest.Test {
  return request(t.app).post(`/conversations/${conversationId}/negotiate`).send(body);
}

it('a tool file added, then removed, appears and disappears without a restart', async () => {
  const file = toolsDir.file('hot-tool.js');
  const c = uniqueId('hot');

  expect(await toolNames()).not.toContain('hot-tool');
  const before = await neg(c, { action: 'shout-text', args: { text: 'hi' } });
  expect(before.status).toBe(404);
  expect(before.body.code).toBe('no_tool');

  // Added.
  const added = changeUntil((set) => set.byName.has('hot-tool'));
  writeFileSync(file, HOT_TOOL);
  await added;

  const names = await toolNames();
  expect(names).toContain('hot-tool');
  expect(names).toEqual([...names].sort());
  expect(names).toEqual(expect.arrayContaining(['data-tool', 'example-tool']));
  const tool = await request(t.app).get('/tools/hot-tool').expect(200);
  expect(tool.body.actions).toEqual([
    expect.objectContaining({
      name: 'shout-text',
      qualifiedName: 'hot-tool/shout-text',
      providerName: 'hot-tool_shout-text',
      level: 1,
    }),
  ]);

  const run = await neg(c, { action: 'shout-text', args: { text: 'hi' } });
  expect(run.status).toBe(200);
  expect(run.body.success).toBe(true);
  expect(run.body.output).toEqual({ shouted: 'HI' });
  expect(run.body.routing).toEqual({ tool: 'hot-tool', action: 'shout-text', confidence: 1, explicit: false });
  const listed = await neg(c, { action: 'list-tools' });
  expect((listed.body.output.tools as { name: string }[]).map((x) => x.name)).toContain('hot-tool');

  // Removed.
  const removed = changeUntil((set) => !set.byName.has('hot-tool'));
  unlinkSync(file);
  await removed;

  expect(await toolNames()).not.toContain('hot-tool');
  expect((await request(t.app).get('/tools/hot-tool')).status).toBe(404);
  const after = await neg(c, { action: 'shout-text', args: { text: 'hi' } });
  expect(after.status).toBe(404);
  expect(after.body.code).toBe('no_tool');
  expect(after.body.error).toBe('No tool found for action: shout-text');
  const qualified = await neg(c, { action: 'hot-tool/shout-text', args: { text: 'hi' } });
  expect(qualified.status).toBe(404);
  expect(qualified.body.code).toBe('unknown_tool');
  // The bundled tools still serve.
  expect((await neg(c, { action: 'greet' })).status).toBe(200);
});
