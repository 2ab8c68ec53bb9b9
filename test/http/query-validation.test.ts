/**
 * Invalid query, path, header and body values are 400 problems whose detail
 * says in words what is allowed: never tsoa's union dump ("Could not match
 * the union ...") or a bare regular expression.
 */
import { request } from '../support/auth';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const ID_RULE = 'must be 1 to 128 characters of A-Z a-z 0-9 : _ -';

const cases: [method: 'get' | 'put' | 'post', url: string, body: object | undefined, detail: string][] = [
  ['get', '/tools/definitions?format=bogus', undefined, 'format: must be one of openai, anthropic, mcp, canonical'],
  ['get', '/tools/definitions?limit=abc', undefined, 'limit: must be an integer from 1 to 128'],
  ['get', '/tools/definitions?limit=0', undefined, 'limit: must be an integer from 1 to 128'],
  ['get', '/tools/definitions?limit=1.5', undefined, 'limit: must be an integer from 1 to 128'],
  ['get', '/tools/definitions?conversationId=a%20b', undefined, `conversationId: ${ID_RULE}`],
  ['get', '/tools/prompt?conversationId=a%20b', undefined, `conversationId: ${ID_RULE}`],
  [
    'get',
    '/conversations/c1/approvals?status=bogus',
    undefined,
    'status: must be one of pending, approved, rejected, expired, used, satisfied',
  ],
  ['get', '/conversations/c1/audit?after=x', undefined, 'after: must be an integer from 0 to 9007199254740991'],
  ['get', '/conversations/c1/audit?limit=-1', undefined, 'limit: must be an integer from 1 to 500'],
  ['get', '/conversations?limit=x', undefined, 'limit: must be an integer from 1 to 500'],
  ['get', '/conversations?limit=100000', undefined, 'limit: must be an integer from 1 to 500'],
  ['get', '/conversations/c1/resources?limit=0', undefined, 'limit: must be an integer from 1 to 500'],
  ['get', '/conversations/a%20b', undefined, `id: ${ID_RULE}`],
  ['get', '/conversations/c1/resources/a%20b', undefined, `name: ${ID_RULE}`],
  ['put', '/conversations/c1/permissions/data-tool', { level: 7 }, 'level: must be an integer from 1 to 3'],
  [
    'post',
    '/keys',
    { role: 'root', subject: 'a b' },
    'role: must be one of admin, user; subject: must be 1 to 256 visible ASCII characters (no spaces)',
  ],
  ['post', '/conversations/c1/negotiate', { action: 'x', approvalId: 'a b' }, `approvalId: ${ID_RULE}`],
];

it.each(cases)('%s %s is a 400 problem that says what is allowed', async (method, url, body, detail) => {
  let req = request(t.app)[method](url);
  if (body) req = req.send(body);
  const res = await req.expect(400);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status: 400, code: 'validation_failed', detail });
  expect(res.body.errors.map((e: { path: string; message: string }) => `${e.path}: ${e.message}`).join('; ')).toBe(
    detail,
  );
});

it('a malformed Idempotency-Key header is named with its rule', async () => {
  const res = await request(t.app)
    .post('/conversations/c1/negotiate')
    .set('Idempotency-Key', 'a b')
    .send({ action: 'list-tools' })
    .expect(400);
  expect(res.body.detail).toBe('Idempotency-Key: must be 1 to 255 visible ASCII characters (no spaces)');
});
