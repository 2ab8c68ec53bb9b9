/**
 * What outside testers and an OpenAPI fuzzer sent: input the database cannot
 * store, broken URLs and encodings, prototype keys, races and aborted bodies.
 * Each is a clear 4xx (API.md Conventions), never a 500.
 */
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { Client } from 'pg';
import pino from 'pino';
import type supertest from 'supertest';
import { bearer, request } from '../support/auth';
import { buildApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { MAX_JSON_DEPTH } from '../../src/http/input-checks';
import { applyHttpTimeouts } from '../../src/http/server-timeouts';
import { waitFor } from '../support/poll';
import { close, listen, rawRequest } from '../support/raw-http';
import { serverUrl } from '../support/db-server';
import { type TestApp, createTestApp } from '../support/test-app';
import { uniqueId } from '../support/ids';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

/** A raw POST with a body and no Content-Type (supertest would add one). */
async function rawRequestTo(method: string, path: string, body: Buffer): Promise<{ status: number; text: string }> {
  const server = createServer(t.app);
  const port = await listen(server);
  try {
    return await rawRequest(port, method, path, { 'Content-Length': String(body.length), ...bearer() }, body);
  } finally {
    await close(server);
  }
}

/** A JSON text nested `levels` deep, counting the outer object as level 1: `{"data":[[...]]}`. */
const nestedData = (levels: number): string => `{"data":${'['.repeat(levels - 1)}${']'.repeat(levels - 1)}}`;

function send(method: 'post' | 'put' | 'get', path: string, json?: string): supertest.Test {
  const r = request(t.app)[method](path);
  return json === undefined ? r : r.set('Content-Type', 'application/json').send(json);
}

function expectProblem(res: supertest.Response | { status: number; text: string }, status: number, code: string): void {
  expect(res.status).toBe(status);
  const body = JSON.parse(res.text) as { code: string; detail: string };
  expect(body.code).toBe(code);
  // Nothing of the internals leaks: no stack, no SQL, no file path, no raw NUL.
  expect(res.text).not.toMatch(/\n\s+at |INSERT|SELECT|\/work\/|src\//);
  expect(res.text).not.toContain('\u0000');
}

describe('input the database cannot store is a 400 validation_failed', () => {
  // Every row has four entries: jest takes a fourth parameter the row lacks for a done callback.
  const cases: Array<[string, 'post' | 'put' | 'get', () => string, string | undefined]> = [
    [
      'NUL in resource data',
      'put',
      () => `/conversations/${uniqueId('hostile')}/resources/doc`,
      '{"data":"a\\u0000b"}',
    ],
    [
      'NUL in an object key',
      'put',
      () => `/conversations/${uniqueId('hostile')}/resources/doc`,
      '{"data":{"k\\u0000":1}}',
    ],
    ['NUL in conversation metadata', 'post', () => '/conversations', '{"metadata":{"note":"\\u0000"}}'],
    [
      'NUL in a prefix query value',
      'get',
      () => `/conversations/${uniqueId('hostile')}/resources?prefix=a%00`,
      undefined,
    ],
    [
      'NUL in a createdBy query value',
      'get',
      () => `/conversations/${uniqueId('hostile')}/resources?createdBy=%00`,
      undefined,
    ],
    ['NUL in a tool name', 'get', () => '/tools/data%00tool', undefined],
    [
      'NUL in the negotiate action',
      'post',
      () => `/conversations/${uniqueId('hostile')}/negotiate`,
      '{"action":"list\\u0000"}',
    ],
    [
      'a lone surrogate in resource data',
      'put',
      () => `/conversations/${uniqueId('hostile')}/resources/d`,
      '{"data":"\\ud800"}',
    ],
    ['a lone surrogate in metadata', 'post', () => '/conversations', '{"metadata":{"x":["\\udc00"]}}'],
    ['a lone surrogate in a key', 'post', () => '/conversations', '{"metadata":{"\\ud800":1}}'],
    [
      'JSON nested deeper than 64 levels',
      'put',
      () => `/conversations/${uniqueId('hostile')}/resources/d`,
      nestedData(65),
    ],
    ['JSON nested 10,000 levels', 'put', () => `/conversations/${uniqueId('hostile')}/resources/d`, nestedData(10000)],
    ['a __proto__ key in metadata', 'post', () => '/conversations', '{"metadata":{"__proto__":null}}'],
    ['a nested __proto__ key', 'post', () => '/conversations', '{"metadata":{"a":{"__proto__":{"x":1}}}}'],
    ['% in the path', 'get', () => '/conversations/%', undefined],
    ['%ZZ in the path', 'get', () => '/conversations/%ZZ/resources', undefined],
    ['%ff in the path', 'get', () => '/conversations/%ff', undefined],
    ['%ff in a query value', 'get', () => `/conversations/${uniqueId('hostile')}/resources?prefix=%ff`, undefined],
    ['a lone % in a query value', 'get', () => `/conversations/${uniqueId('hostile')}/resources?prefix=%`, undefined],
    ['%ff in a query of /tools/definitions', 'get', () => '/tools/definitions?format=openai&query=%ff', undefined],
  ];

  it.each(cases)('%s', async (_label, method, path, json) => {
    const res = await send(method, path(), json);
    expectProblem(res, 400, 'validation_failed');
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });

  it('stores nothing when refused', async () => {
    const id = uniqueId('hostile');
    await send('post', '/conversations', `{"id":"${id}","metadata":{"__proto__":null}}`).expect(400);
    await request(t.app).get(`/conversations/${id}`).expect(404);
    await send('put', `/conversations/${id}/resources/doc`, '{"data":"\\u0000"}').expect(400);
    await request(t.app).get(`/conversations/${id}/resources/doc`).expect(404);
    // A number beyond double range would be stored as null.
    const huge = await send('put', `/conversations/${id}/resources/doc`, '{"data":{"n":-1e400}}');
    expectProblem(huge, 400, 'validation_failed');
    expect(JSON.parse(huge.text).errors).toEqual([{ path: 'data.n', message: expect.stringContaining('too large') }]);
    await request(t.app).get(`/conversations/${id}/resources/doc`).expect(404);
  });

  it('accepts 64 levels, astral characters (surrogate pairs) and a __proto__ text value', async () => {
    const id = uniqueId('hostile');
    await send('put', `/conversations/${id}/resources/deep`, nestedData(MAX_JSON_DEPTH)).expect(201);
    const res = await send(
      'put',
      `/conversations/${id}/resources/emoji`,
      '{"data":{"s":"\\ud83d\\ude00","k":"__proto__"}}',
    );
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({ s: '😀', k: '__proto__' });
  });

  it('inside negotiate args, answers the negotiate result 400 invalid_args', async () => {
    for (const args of [
      '{"name":"x","data":"\\u0000"}',
      `{"name":"x","data":${nestedData(100).slice(8, -1)}}`,
      '{"name":"x","data":{"n":[1e400]}}',
    ]) {
      const res = await send(
        'post',
        `/conversations/${uniqueId('hostile')}/negotiate`,
        `{"action":"create-resource","args":${args}}`,
      );
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toMatchObject({ success: false, code: 'invalid_args' });
      expect(res.body.error).toMatch(/^Invalid args: args\.data/);
    }
  });
});

describe('a body that is not JSON', () => {
  it.each([
    ['text/plain', 'post', '/conversations/{c}/negotiate', '{"action":"calculator/add","args":{"a":1,"b":2}}'],
    ['application/x-www-form-urlencoded', 'post', '/conversations', 'id=x'],
    ['text/plain', 'put', '/conversations/{c}/permissions/data-tool', '{"level":2}'],
    ['application/xml', 'put', '/conversations/{c}/resources/doc', '<data/>'],
  ] as const)('%s on %s %s is 415 unsupported_media_type, and nothing is created', async (type, method, path, body) => {
    const c = uniqueId('media');
    const res = await request(t.app)[method](path.replace('{c}', c)).set('Content-Type', type).send(body);
    expectProblem(res, 415, 'unsupported_media_type');
    expect(JSON.parse(res.text).detail).toContain(type);
    await request(t.app).get(`/conversations/${c}`).expect(404);
  });

  it('with no Content-Type at all is 415 too; an empty body without one is no body (the route says what it lacks)', async () => {
    const res = await rawRequestTo('POST', '/conversations', Buffer.from('{"id":"x"}'));
    expectProblem(res, 415, 'unsupported_media_type');
    expectProblem(await rawRequestTo('POST', '/conversations', Buffer.alloc(0)), 400, 'validation_failed');
  });
});

describe('request bodies with a Content-Encoding', () => {
  let server: ReturnType<typeof createServer>;
  let port: number;
  beforeAll(async () => {
    server = createServer(t.app);
    port = await listen(server);
  });
  afterAll(async () => close(server));

  const post = (encoding: string, body: Buffer): ReturnType<typeof rawRequest> =>
    rawRequest(
      port,
      'POST',
      '/conversations',
      { 'Content-Type': 'application/json', 'Content-Encoding': encoding, ...bearer() },
      body,
    );

  it('decodes gzip', async () => {
    const res = await post('gzip', gzipSync(JSON.stringify({ metadata: { via: 'gzip' } })));
    expect(res.status).toBe(201);
    expect(JSON.parse(res.text).metadata).toEqual({ via: 'gzip' });
  });

  it('an unknown encoding is 415 unsupported_media_type', async () => {
    expectProblem(await post('x-snappy', Buffer.from('{}')), 415, 'unsupported_media_type');
  });

  it('a body that is not valid UTF-8 is 400 validation_failed, and nothing is created', async () => {
    const id = uniqueId('utf8');
    const bytes = Buffer.concat([
      Buffer.from(`{"id":"${id}","metadata":{"x":"`),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}}'),
    ]);
    const res = await rawRequest(
      port,
      'POST',
      '/conversations',
      { 'Content-Type': 'application/json', ...bearer() },
      bytes,
    );
    expectProblem(res, 400, 'validation_failed');
    expect((await request(t.app).get(`/conversations/${id}`)).status).toBe(404);
  });

  it('a gzip (or br) body that is not one is 400 validation_failed', async () => {
    expectProblem(await post('gzip', Buffer.from('{"not":"gzip"}')), 400, 'validation_failed');
    expectProblem(await post('br', Buffer.from('{"not":"brotli"}')), 400, 'validation_failed');
  });
});

describe('a known path with an unsupported method', () => {
  it.each([
    ['delete', '/tools', 'GET, HEAD'],
    ['patch', '/conversations/c1', 'DELETE, GET, HEAD'],
    ['post', '/healthz', 'GET, HEAD'],
    ['put', '/conversations/c1/mcp', 'GET, POST'],
    ['get', '/conversations/c1/negotiate', 'POST'],
  ] as const)('%s %s is 405 with Allow: %s', async (method, path, allow) => {
    const res = await request(t.app)[method](path);
    expectProblem(res, 405, 'method_not_allowed');
    expect(res.headers.allow).toBe(allow);
  });

  it('an unknown path is still 404', async () => {
    const res = await request(t.app).delete('/no-such-thing');
    expectProblem(res, 404, 'not_found');
    expect(res.headers.allow).toBeUndefined();
  });
});

describe('If-Match', () => {
  async function resourceAtVersion2(): Promise<string> {
    const path = `/conversations/${uniqueId('hostile')}/resources/doc`;
    await send('put', path, '{"data":1}').expect(201);
    await send('put', path, '{"data":2}').expect(200);
    return path;
  }

  it('well-formed tags that are no version are 412, malformed ones 400', async () => {
    const path = await resourceAtVersion2();
    for (const tag of ['"abc"', 'W/"x"', '"1", "abc"']) {
      expectProblem(await send('put', path, '{"data":3}').set('If-Match', tag), 412, 'precondition_failed');
    }
    expectProblem(await request(t.app).delete(path).set('If-Match', '"abc"'), 412, 'precondition_failed');
    for (const tag of ['abc', '"1" "2"', '"1",', '']) {
      expectProblem(await send('put', path, '{"data":3}').set('If-Match', tag), 400, 'validation_failed');
    }
  });

  it('a list of many tags costs one UPDATE, and the matching one wins', async () => {
    const path = await resourceAtVersion2();
    const tags = Array.from({ length: 500 }, (_, i) => `"${i + 3}"`);
    const spy = jest.spyOn(t.db.pool, 'query');
    // The authenticator's revocation poll shares the pool: its statement is not this request's.
    const query = {
      mock: {
        get calls() {
          return spy.mock.calls.filter((c) => (c[0] as { name?: string }).name !== 'key_revoked_within');
        },
      },
      mockClear: () => spy.mockClear(),
      mockRestore: () => spy.mockRestore(),
    };
    try {
      expectProblem(await send('put', path, '{"data":3}').set('If-Match', tags.join(', ')), 412, 'precondition_failed');
      // ensure the conversation, the conditional UPDATE, the read for the 412's detail
      expect(query.mock.calls.length).toBeLessThanOrEqual(3);
      query.mockClear();
      const res = await send('put', path, '{"data":3}').set('If-Match', [...tags, '"2"'].join(', '));
      expect(res.status).toBe(200);
      expect(res.body.version).toBe(3);
      expect(query.mock.calls.length).toBeLessThanOrEqual(2);
      query.mockClear();
      await request(t.app)
        .delete(path)
        .set('If-Match', [...tags, '"3"'].join(','))
        .expect(204);
      expect(query.mock.calls.length).toBe(1);
    } finally {
      query.mockRestore();
    }
  });

  it('a header longer than 4096 characters is 400', async () => {
    const path = await resourceAtVersion2();
    const tags = Array.from({ length: 700 }, (_, i) => `"${i}"`).join(', ');
    expectProblem(await send('put', path, '{"data":3}').set('If-Match', tags), 400, 'validation_failed');
  });
});

// Needs two sessions: the embedded database has one, where this race cannot happen.
(serverUrl() ? it : it.skip)('a resource PUT racing the deletion of its conversation is 404 not_found', async () => {
  const id = uniqueId('hostile');
  await request(t.app).post('/conversations').send({ id }).expect(201);
  const deleter = new Client(t.database.client);
  await deleter.connect();
  try {
    // Hold the conversation row so the PUT passes its "ensure the conversation"
    // step and then waits in the foreign-key check of its INSERT; delete the
    // row meanwhile: the INSERT then finds its conversation gone.
    await deleter.query('BEGIN');
    await deleter.query('SELECT 1 FROM conversations WHERE id = $1 FOR UPDATE', [id]);
    const put = send('put', `/conversations/${id}/resources/doc`, '{"data":1}').then((r) => r);
    await waitFor('the PUT to wait for the conversation row', async () => {
      const { rows } = await deleter.query(
        `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      return rows.length > 0;
    });
    await deleter.query('DELETE FROM conversations WHERE id = $1', [id]);
    await deleter.query('COMMIT');
    expectProblem(await put, 404, 'not_found');
  } finally {
    await deleter.end();
  }
});

it('a client that aborts mid-body is logged at debug, with no error line and no 500', async () => {
  const lines: Array<{ level: number; msg: string; status?: number }> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const server = createServer(buildApp({ ...t.services, logger }));
  const port = await listen(server);
  try {
    const socket = connect(port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    // The app's listener runs first, so once this fires the body parser is reading.
    const arrived = new Promise((resolve) => server.once('request', resolve));
    socket.write(
      'PUT /conversations/abort-1/resources/doc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
        `Authorization: ${bearer().Authorization}\r\nContent-Length: 1000\r\n\r\n{"data":"only part of`,
    );
    await arrived;
    socket.destroy();
    await waitFor('the abort to be logged', () => lines.some((l) => l.msg === 'client aborted the request body'));
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(lines.filter((l) => l.status !== undefined && l.status >= 500)).toEqual([]);
    expect(lines.find((l) => l.msg === 'client aborted the request body')!.level).toBe(20);
  } finally {
    await close(server);
  }
});

it('a client that sends its headers slowly is answered 408 and cut off (HTTP_HEADERS_TIMEOUT_MS)', async () => {
  const config = loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '200', HTTP_REQUEST_TIMEOUT_MS: '1000' });
  const server = applyHttpTimeouts(createServer(t.app), config);
  const port = await listen(server);
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('utf8')));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  // A header line now and then, never the blank line that ends them: the slowloris pattern.
  socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
  const trickle = setInterval(() => socket.writable && socket.write('X-Slow: 1\r\n'), 50);
  try {
    let done = false;
    void closed.then(() => (done = true));
    await waitFor('the server to close the slow connection', () => done);
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
  } finally {
    clearInterval(trickle);
    socket.destroy();
    await close(server);
  }
});
