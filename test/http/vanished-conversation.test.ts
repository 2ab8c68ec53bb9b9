/**
 * A conversation deleted while a write action runs: the action's INSERT
 * fails on the foreign key (SQLSTATE 23503). src/db translates that into the
 * domain's not_found, and negotiate answers it as REST does, a 404 problem,
 * not a tool_error (a 500 blaming the tool), in-process and in a worker alike.
 */
import { request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { waitForFile } from '../support/isolation-tools';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { type TestApp, createTestApp } from '../support/test-app';

/** Writes `waiting-<name>`, waits (bounded) for the test's `go-<name>`, then creates the resource. */
function waitingToolModule(dir: string): string {
  return `const { existsSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: 'waiting-tool', version: '1.0.0', description: 'Writes when the test says so',
  actions: {
    'write-on-cue': defineAction({ description: 'Waits for a cue, then writes', level: 2,
      input: z.object({ name: z.string() }),
      handler: async ({ name }, ctx) => {
        writeFileSync(join(${JSON.stringify(dir)}, 'waiting-' + name), '');
        const deadline = Date.now() + 15000;
        while (!existsSync(join(${JSON.stringify(dir)}, 'go-' + name))) {
          if (Date.now() > deadline) throw new Error('no cue');
          await new Promise((r) => setTimeout(r, 20));
        }
        return ctx.sharedContext.createResource(name, { n: 1 });
      } }),
  },
});
`;
}

describe.each([false, true])('isolateToolsDir %s', (isolate) => {
  let t: TestApp;
  let tools: ScratchDir;
  let cues: ScratchDir;

  beforeAll(async () => {
    cues = scratchDir('cues');
    tools = scratchDir('vanish-tools', { 'waiting-tool.js': waitingToolModule(cues.path) });
    t = await createTestApp({ TOOLS_DIR: tools.path }, { registry: { isolateToolsDir: isolate } });
  });

  afterAll(async () => {
    await t?.close();
    tools?.remove();
    cues?.remove();
  });

  it('negotiate answers a conversation deleted mid-action with a 404 not_found problem', async () => {
    const c = uniqueId('vanish');
    await request(t.app).put(`/conversations/${c}/permissions/waiting-tool`).send({ level: 2 }).expect(200);
    const running = request(t.app)
      .post(`/conversations/${c}/negotiate`)
      .send({ action: 'waiting-tool/write-on-cue', args: { name: 'doc' } })
      .then((res) => res);
    await waitForFile(cues.file('waiting-doc'));
    await request(t.app).delete(`/conversations/${c}`).expect(204);
    cues.write('go-doc', '');

    const res = await running;
    expect(res.status).toBe(404);
    expect(res.type).toBe('application/problem+json');
    expect(res.body).toMatchObject({ code: 'not_found', status: 404 });
    expect(JSON.stringify(res.body)).not.toMatch(/23503|foreign key|INSERT/i);
    // Nothing was left behind: the conversation stays gone.
    await request(t.app).get(`/conversations/${c}`).expect(404);
  });
});
