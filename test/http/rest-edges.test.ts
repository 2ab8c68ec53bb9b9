import { request } from '../support/auth';
import { ConversationSharedContext } from '../../src/core/shared-context';
import { type TestApp, createTestApp } from '../support/test-app';
import { uniqueId } from '../support/ids';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

it('PUT of a resource without data is a 400 problem, and nothing is stored', async () => {
  const id = uniqueId('edge');
  const res = await request(t.app).put(`/conversations/${id}/resources/doc`).send({}).expect(400);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body.code).toBe('validation_failed');
  await request(t.app).get(`/conversations/${id}/resources/doc`).expect(404);
});

it('PUT of a resource with null data stores null', async () => {
  const id = uniqueId('edge');
  const res = await request(t.app).put(`/conversations/${id}/resources/doc`).send({ data: null }).expect(201);
  expect(res.body.data).toBeNull();
});

it('lists one permission row per registered tool, even with a stored level of an unregistered tool', async () => {
  const id = uniqueId('edge');
  await request(t.app).post('/conversations').send({ id }).expect(201);
  await t.db.pool.query("INSERT INTO tool_permissions (conversation_id, tool, level) VALUES ($1, 'retired-tool', 3)", [
    id,
  ]);
  const res = await request(t.app).get(`/conversations/${id}/permissions`).expect(200);
  const tools = (await request(t.app).get('/tools').expect(200)).body.tools.map((x: { name: string }) => x.name);
  expect(res.body.tools.map((r: { tool: string }) => r.tool)).toEqual(tools);
});

it('a level-1 action cannot write through the shared context', async () => {
  // list-resources is level 1; the data-tool's own actions never write from it,
  // so this checks the context itself: a read-only context refuses writes.
  const ctx = new ConversationSharedContext({
    conversationId: uniqueId('edge'),
    toolName: 'data-tool',
    resources: t.services.resources,
  });
  await expect(ctx.createResource('x', 1)).rejects.toThrow(/Read-level action/);
});
