/**
 * Subscriptions of a TOOLS_DIR tool that runs isolated (in its worker
 * thread, the default): its `on` handlers are reported by the worker and run
 * there, as action `on:TYPE` with the event as args, with the same shared
 * context (its writes by the tool) as an in-process tool's.
 */
import { request } from '../support/auth';
import { uniqueId } from '../support/ids';
import { createConversation, mintKey } from '../support/identity';
import { waitFor } from '../support/poll';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';
import { type TestApp, createTestApp } from '../support/test-app';

/** copier: on `in-*` created, writes `out-*` with the event's subject (no data) and the data it reads. */
const COPIER = `module.exports = ({ defineTool, z }) => defineTool({
  name: 'copier', version: '1.0.0', description: 'copies in-* to out-*',
  actions: { noop: { description: 'nothing', level: 1, input: z.object({}), handler: () => ({}) } },
  on: {
    'resource.created': { names: ['in-*'], level: 2, handler: async (event, ctx) => {
      const source = await ctx.sharedContext.getResource(event.subject.name);
      await ctx.sharedContext.createResource('out-' + event.subject.name.slice(3), {
        type: event.type, subject: event.subject, data: source.data, isolatedAction: ctx.action,
      });
    } },
  } });`;

let toolsDir: ScratchDir;
let t: TestApp;

beforeAll(async () => {
  toolsDir = scratchDir('subscriptions-isolated', { 'copier.js': COPIER });
  t = await createTestApp({ TOOLS_DIR: toolsDir.path }, { subscriptions: { sweepMs: 20 } });
});

afterAll(async () => {
  await t?.close();
  toolsDir?.remove();
});

it('runs an isolated tool’s handler in its worker, writing as the tool', async () => {
  expect(t.registry.current().tools.find((x) => x.name === 'copier')?.subscriptions).toEqual([
    expect.objectContaining({ type: 'resource.created', names: ['in-*'], level: 2 }),
  ]);
  const alice = await mintKey(t.app, 'user', uniqueId('alice'));
  const id = uniqueId('subs-iso');
  await createConversation(t.app, alice.token, id);
  await request(t.app, alice.token).put(`/conversations/${id}/permissions/copier`).send({ level: 2 }).expect(200);
  await request(t.app, alice.token)
    .put(`/conversations/${id}/resources/in-a`)
    .send({ data: { n: 7 } })
    .expect(201);
  let out: Record<string, unknown> | undefined;
  await waitFor('the handler wrote out-a', async () => {
    const res = await request(t.app, alice.token).get(`/conversations/${id}/resources/out-a`);
    out = res.status === 200 ? (res.body as Record<string, unknown>) : undefined;
    return out !== undefined;
  });
  expect(out).toMatchObject({
    createdBy: 'copier',
    data: {
      type: 'resource.created',
      subject: expect.objectContaining({ name: 'in-a', version: 1, createdBy: 'client' }),
      data: { n: 7 },
      isolatedAction: 'on:resource.created',
    },
  });
});
