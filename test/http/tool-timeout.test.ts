/**
 * A tool that never finishes: the call answers tool_error after
 * TOOL_TIMEOUT_MS, its writes are rolled back, and the service goes on.
 */
import { request } from '../support/auth';
import { type TestApp, createTestApp } from '../support/test-app';
import { uniqueId } from '../support/ids';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';

const STUCK_TOOL = `module.exports = ({ defineTool, defineAction, z }) => defineTool({
  name: 'stuck-tool', version: '1.0.0', description: 'Never finishes',
  actions: {
    'hang': defineAction({ description: 'Never returns', level: 1, input: z.object({}),
      handler: () => new Promise(() => undefined) }),
    'write-then-hang': defineAction({ description: 'Writes, then never returns', level: 2, input: z.object({ name: z.string() }),
      handler: async ({ name }, ctx) => { await ctx.sharedContext.createResource(name, { half: true }); return new Promise(() => undefined); } }),
  },
});
`;

let t: TestApp;
let toolsDir: ScratchDir;
beforeAll(async () => {
  toolsDir = scratchDir('stuck-tools', { 'stuck-tool.js': STUCK_TOOL });
  t = await createTestApp({ TOOLS_DIR: toolsDir.path, TOOL_TIMEOUT_MS: '300' });
});
afterAll(async () => {
  await t?.close();
  toolsDir?.remove();
});

it('answers tool_error when a tool does not finish in time', async () => {
  const res = await request(t.app)
    .post(`/conversations/${uniqueId('stuck')}/negotiate`)
    .send({ action: 'stuck-tool/hang' })
    .expect(500);
  expect(res.body).toMatchObject({ success: false, code: 'tool_error' });
  expect(res.body.error).toContain('within 300 ms');
});

it('rolls back what a timed-out action wrote, and keeps serving', async () => {
  const c = uniqueId('stuck');
  await request(t.app).put(`/conversations/${c}/permissions/stuck-tool`).send({ level: 2 }).expect(200);
  await request(t.app)
    .post(`/conversations/${c}/negotiate`)
    .send({ action: 'stuck-tool/write-then-hang', args: { name: 'half' } })
    .expect(500);
  await request(t.app).get(`/conversations/${c}/resources/half`).expect(404);
  const again = await request(t.app)
    .post(`/conversations/${c}/negotiate`)
    .send({ action: 'greet', args: { name: 'after' } })
    .expect(200);
  expect(again.body.output.message).toBe('Hello, after!');
});
