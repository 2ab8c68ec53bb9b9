import { readFileSync } from 'node:fs';
import { request } from '../support/auth';
import { OPENAPI_PATH } from '../../src/app';
import { type TestApp, createTestApp } from '../support/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ BODY_LIMIT: '2kb' });
});
afterAll(async () => t?.close());

describe('operations', () => {
  it('GET /healthz answers ok', async () => {
    const res = await request(t.app).get('/healthz').expect(200);
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('GET /readyz is 200 when the database answers', async () => {
    const res = await request(t.app).get('/readyz').expect(200);
    expect(res.body.status).toBe('ready');
  });

  it('returns the request id it was given, or makes one', async () => {
    const given = await request(t.app).get('/healthz').set('X-Request-Id', 'abc-123');
    expect(given.headers['x-request-id']).toBe('abc-123');
    const made = await request(t.app).get('/healthz');
    expect(made.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers unknown routes with problem+json 404', async () => {
    const res = await request(t.app).get('/no/such/route').expect(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 404, code: 'not_found', title: 'Not found' });
    expect(typeof res.body.type).toBe('string');
    expect(typeof res.body.detail).toBe('string');
  });

  it('answers invalid JSON with problem+json 400', async () => {
    const res = await request(t.app)
      .post('/conversations')
      .set('Content-Type', 'application/json')
      .send('{"id": ')
      .expect(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('validation_failed');
    expect(res.body.detail).toBe('Request body is not valid JSON');
  });

  it.each(['null', '42', '"text"', 'true'])('answers valid JSON that is not an object (%s) as such', async (body) => {
    const res = await request(t.app)
      .post('/conversations/x/negotiate')
      .set('Content-Type', 'application/json')
      .send(body)
      .expect(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ code: 'validation_failed', detail: 'Request body must be a JSON object' });
  });

  it('answers bodies over BODY_LIMIT with problem+json 413', async () => {
    const res = await request(t.app)
      .post('/conversations')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ metadata: { blob: 'x'.repeat(4096) } }))
      .expect(413);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body.code).toBe('payload_too_large');
  });

  it('serves exactly the committed spec at /openapi.json', async () => {
    const res = await request(t.app).get('/openapi.json').expect(200);
    expect(res.text).toBe(readFileSync(OPENAPI_PATH, 'utf8'));
    expect(res.body.openapi).toMatch(/^3\./);
  });

  it('serves Swagger UI at /docs', async () => {
    const res = await request(t.app).get('/docs/').expect(200);
    expect(res.text).toContain('swagger-ui');
  });
});
