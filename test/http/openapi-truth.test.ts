/**
 * The OpenAPI spec against the running service, as a schema-driven tester
 * (Schemathesis) or a generated client meets them: every status an answer
 * has is declared for its operation; what the schema calls valid is not
 * refused with a 400 and what it calls invalid is; OPTIONS and 405 list
 * exactly the methods the spec documents for the path. The probes walk the
 * spec's operations, so an operation added later is probed too.
 */
import type { Response } from 'supertest';
import { DENY_PATTERN_RE } from '../../src/core/policy';
import { SUBJECT_RE } from '../../src/core/keys';
import { parsePrecondition } from '../../src/http/preconditions';
import { anonymous, request } from '../support/auth';
import { uniqueId } from '../support/ids';
import {
  type Operation,
  type Schema,
  declaredResponse,
  invalidity,
  isSecured,
  operations,
  resolve,
  spec,
  templateOf,
  unknownKeywords,
} from '../support/openapi-schema';
import { type TestApp, createTestApp } from '../support/test-app';
import { bearer } from '../support/auth';
import { listen, stopListening } from '../support/identity';
import { openSse } from '../support/sse';

const BODY_LIMIT = 4096;

let t: TestApp;
const conv = uniqueId('truth');
beforeAll(async () => {
  t = await createTestApp({ BODY_LIMIT: String(BODY_LIMIT) });
  await request(t.app).post('/conversations').send({ id: conv }).expect(201);
  await request(t.app).put(`/conversations/${conv}/resources/doc`).send({ data: 1 }).expect(201);
});
afterAll(async () => t?.close());

/** A value for each path parameter: things that exist where that is possible. */
const PATH_VALUES: Record<string, string> = {
  id: conv,
  conversationId: conv,
  name: 'doc',
  tool: 'data-tool',
  approvalId: 'apr_none',
  keyId: 'key_none',
  action: 'none',
  webhookId: 'wh_none',
};

function concrete(template: string, values: Record<string, string> = PATH_VALUES): string {
  return template.replace(/\{(\w+)\}/g, (_m, name: string) => {
    // /tools/{name} is a tool's name, the resources' {name} a resource's.
    if (name === 'name' && template.startsWith('/tools/')) return 'data-tool';
    const value = values[name];
    if (value === undefined) throw new Error(`no sample for path parameter ${name} of ${template}`);
    return value;
  });
}

/** A schema-valid body for each operation that takes one. */
function sampleBody(method: string, template: string): object {
  const key = `${method.toUpperCase()} ${template}`;
  const bodies: Record<string, () => object> = {
    'POST /conversations': () => ({}),
    'POST /keys': () => ({ role: 'user', subject: uniqueId('subject') }),
    'POST /conversations/{id}/agent-keys': () => ({}),
    'PUT /conversations/{id}/permissions/{tool}': () => ({ level: 1 }),
    'PUT /conversations/{id}/resources/{name}': () => ({ data: 1 }),
    'POST /conversations/{id}/transactions': () => ({
      operations: [{ op: 'create', name: uniqueId('truth-tx'), data: 1, ttlSeconds: 60 }],
    }),
    'POST /conversations/{conversationId}/negotiate': () => ({ action: 'list-tools' }),
    'POST /conversations/{id}/approvals/{approvalId}/approve': () => ({ scope: 'once' }),
    'POST /conversations/{id}/approvals/{approvalId}/reject': () => ({}),
    // A participant whose upstream nothing serves: registered (201), its status `failing`.
    'POST /participants': () => ({
      name: `p-${uniqueId('t')
        .toLowerCase()
        .replace(/[^a-z0-9]/g, '')
        .slice(-12)}`,
      transport: 'mcp-http',
      url: 'http://127.0.0.1:9/mcp',
    }),
    'PATCH /participants/{name}': () => ({ description: 'changed' }),
    'PUT /participants/{name}/credentials/me': () => ({ headers: { Authorization: 'Bearer x' } }),
    // Nothing listens there: created (201) all the same, its deliveries fail.
    'POST /webhooks': () => ({ url: 'http://127.0.0.1:9/hook', events: ['approval.requested'] }),
  };
  const make = bodies[key];
  if (!make) throw new Error(`no sample body for ${key}: add one`);
  return make();
}

function operationOf(method: string, path: string): Operation {
  const template = templateOf(path.split('?')[0]!);
  const op = template ? spec.paths[template]?.[method.toLowerCase()] : undefined;
  if (!op) throw new Error(`the spec has no ${method} ${path}`);
  return op;
}

/** The answer's status must be one the operation declares, and its media type one declared for that status. */
function expectDeclared(res: Response, method: string, path: string): void {
  const responses = operationOf(method, path).responses;
  const what = `${method.toUpperCase()} ${path} answered ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`;
  const declared = responses[String(res.status)];
  expect({ what, declared: declared !== undefined }).toEqual({ what, declared: true });
  const type = String(res.headers['content-type'] ?? '').split(';')[0];
  if (!type) return;
  const media = Object.keys(declaredResponse(declared!).content ?? {});
  expect({ what, type, declared: media.includes(type) }).toEqual({ what, type, declared: true });
}

/** An operation answering Server-Sent Events: a stream that stays open, so its probe reads the headers and leaves. */
function isEventStream(op: Operation): boolean {
  const ok = op.responses['200'];
  return ok !== undefined && Object.keys(declaredResponse(ok).content ?? {}).includes('text/event-stream');
}

async function probeEventStream(method: string, path: string): Promise<void> {
  const { server, base } = await listen(t.app);
  try {
    const s = await openSse(`${base}${path}`, bearer());
    s.close();
    expectDeclared({ status: s.status, headers: s.headers, body: {} } as unknown as Response, method, path);
    expect(s.status).toBe(200);
  } finally {
    await stopListening(server);
  }
}

type Method = 'get' | 'post' | 'put' | 'delete' | 'patch' | 'options' | 'head';

function send(method: Method, path: string, token?: string | null) {
  return token === null ? anonymous(t.app)[method](path) : request(t.app, token)[method](path);
}

const byName = operations.map((o) => [`${o.method.toUpperCase()} ${o.path}`, o] as const);

describe('every operation', () => {
  it.each(byName)('%s declares the statuses of the middleware in front of it', (_name, { op }) => {
    const declared = Object.keys(op.responses);
    const expected = ['400', '403', '500'];
    if (isSecured(op)) expected.push('401', '429', '503');
    if (op.requestBody) expected.push('413', '415');
    expect(expected.filter((s) => !declared.includes(s))).toEqual([]);
  });

  it.each(byName)('%s: a request as the spec describes it gets a declared status', async (_name, o) => {
    if (isEventStream(o.op)) return probeEventStream(o.method, concrete(o.path));
    // A DELETE takes a conversation of its own: the other probes need theirs.
    const own = uniqueId('truth-own');
    if (o.method === 'delete') await request(t.app).put(`/conversations/${own}/resources/doc`).send({ data: 1 });
    const path = concrete(o.path, o.method === 'delete' ? { ...PATH_VALUES, id: own } : PATH_VALUES);
    let req = send(o.method as Method, path);
    if (o.op.requestBody) req = req.send(sampleBody(o.method, o.path));
    const res = await req;
    expectDeclared(res, o.method, path);
    expect(res.status).toBeLessThan(500);
  });

  it.each(byName)('%s without a token: 401 where it has security, declared', async (_name, o) => {
    const path = concrete(o.path);
    const res = await send(o.method as Method, path, null);
    if (isSecured(o.op)) expect(res.status).toBe(401);
    else expect(res.status).not.toBe(401);
    expectDeclared(res, o.method, path);
  });

  it.each(byName)('%s from a foreign Origin: a declared 403', async (_name, o) => {
    const path = concrete(o.path);
    const res = await send(o.method as Method, path).set('Origin', 'https://attacker.example');
    expect(res.status).toBe(403);
    expectDeclared(res, o.method, path);
  });

  it.each(byName)('%s with malformed percent-encoding in the query: a declared 400', async (_name, o) => {
    const path = `${concrete(o.path)}?x=%zz`;
    const res = await send(o.method as Method, path);
    expect(res.status).toBe(400);
    expectDeclared(res, o.method, path);
  });

  const withBody = byName.filter(([, o]) => o.op.requestBody);

  it.each(withBody)('%s with a body that is not JSON: a declared 415', async (_name, o) => {
    const path = concrete(o.path);
    const res = await send(o.method as Method, path)
      .set('Content-Type', 'text/plain')
      .send('hello');
    expect(res.status).toBe(415);
    expectDeclared(res, o.method, path);
  });

  it.each(withBody)('%s with a body over BODY_LIMIT: a declared 413', async (_name, o) => {
    const path = concrete(o.path);
    const res = await send(o.method as Method, path)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ pad: 'x'.repeat(BODY_LIMIT) }));
    expect(res.status).toBe(413);
    expectDeclared(res, o.method, path);
  });
});

describe('methods a path serves', () => {
  const documented = (template: string) =>
    Object.keys(spec.paths[template]!)
      .map((m) => m.toUpperCase())
      .sort();
  /** Allow without HEAD and OPTIONS, which HTTP frameworks add and specs leave out. */
  const served = (res: Response) =>
    String(res.headers.allow ?? '')
      .split(',')
      .map((m) => m.trim())
      .filter((m) => m && m !== 'HEAD' && m !== 'OPTIONS')
      .sort();

  it.each(Object.keys(spec.paths))('OPTIONS %s: Allow lists exactly the documented methods', async (template) => {
    const res = await send('options', concrete(template));
    expect(res.status).toBe(405);
    expect(served(res)).toEqual(documented(template));
    // HEAD is served wherever GET is (express answers it with the GET route).
    expect(String(res.headers.allow).includes('HEAD')).toBe(documented(template).includes('GET'));
  });

  const withoutPatch = Object.keys(spec.paths).filter((template) => !spec.paths[template]?.patch);
  it.each(withoutPatch)('PATCH %s (undocumented): 405 with the same Allow', async (template) => {
    const res = await send('patch', concrete(template)).send({});
    expect(res.status).toBe(405);
    expect(served(res)).toEqual(documented(template));
  });

  it("a literal path is that URL: PUT .../permissions/history is no tool's level (405, Allow: GET, HEAD)", async () => {
    for (const path of [`/conversations/${conv}/permissions/history`, `/conversations/${conv}/permissions/HISTORY/`]) {
      const res = await send('put', path).send({ level: 2 });
      expect([res.status, res.headers.allow]).toEqual([405, 'GET, HEAD']);
    }
    await send('put', `/conversations/${conv}/permissions/data-tool`).send({ level: 1 }).expect(200);
  });

  it('HEAD is served where Allow says so', async () => {
    const res = await send('head', '/tools');
    expect(res.status).toBe(200);
  });

  it('the docs page serves GET only; OPTIONS on the MCP endpoint is refused like everywhere else', async () => {
    expect((await send('get', '/docs/')).status).toBe(200);
    for (const method of ['put', 'post', 'options'] as const) {
      const res = await send(method, '/docs/');
      expect([method, res.status, res.headers.allow]).toEqual([method, 405, 'GET, HEAD']);
    }
    const mcp = await send('options', `/conversations/${conv}/mcp`);
    expect(mcp.status).toBe(405);
    expect(mcp.headers.allow).toBeDefined();
  });
});

describe('over the rate limit', () => {
  it('every operation with security answers a declared 429', async () => {
    const limited = await createTestApp({ RATE_LIMIT_PER_MINUTE: '1' }, { replicaOf: t });
    try {
      await request(limited.app).get('/me').expect(200);
      for (const o of operations.filter((x) => isSecured(x.op))) {
        const path = concrete(o.path);
        const res = await request(limited.app)[o.method as Method](path);
        expect([o.method, path, res.status]).toEqual([o.method, path, 429]);
        expectDeclared(res, o.method, path);
        expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(0);
      }
    } finally {
      await limited.close();
    }
  });
});

describe('the validator reads every keyword the spec uses', () => {
  it('no schema in the spec has a keyword the validator would ignore', () => {
    const unknown: string[] = [];
    const walk = (s: unknown, at: string): void => {
      if (Array.isArray(s)) return s.forEach((x, i) => walk(x, `${at}[${i}]`));
      if (!s || typeof s !== 'object') return;
      const schema = s as Schema;
      unknown.push(...unknownKeywords(schema).map((k) => `${at}: ${k}`));
      for (const key of ['items', 'not', 'additionalProperties'] as const) walk(schema[key], `${at}.${key}`);
      for (const [name, child] of Object.entries(schema.properties ?? {})) walk(child, `${at}.${name}`);
      walk(schema.anyOf, `${at}.anyOf`);
      walk(schema.allOf, `${at}.allOf`);
    };
    for (const [name, schema] of Object.entries(spec.components.schemas)) walk(schema, name);
    for (const o of operations) for (const p of o.op.parameters ?? []) walk(p.schema, `${o.path} ${p.name}`);
    expect(unknown).toEqual([]);
  });
});

/**
 * Bodies and parameters a schema-driven tester sends. Each is checked both
 * ways: what the spec calls valid is not a 400, what it calls invalid is.
 */
describe('schema-valid input is accepted, schema-invalid input refused', () => {
  const future = () => Date.now() + 3_600_000;
  const subject = () => uniqueId('subject');
  type Probe = [label: string, method: Method, path: string, body: () => unknown];
  const probes: Probe[] = [
    ['a user named admin', 'post', '/keys', () => ({ role: 'user', subject: 'admin' })],
    ['an admin key for admin', 'post', '/keys', () => ({ role: 'admin', subject: 'admin' })],
    ['expiresAt as a small number', 'post', '/keys', () => ({ role: 'user', subject: subject(), expiresAt: 5 })],
    ['expiresAt negative', 'post', '/keys', () => ({ role: 'user', subject: subject(), expiresAt: -5 })],
    ['expiresAt in the future', 'post', '/keys', () => ({ role: 'user', subject: subject(), expiresAt: future() })],
    [
      'expiresAt past 9999-12-31',
      'post',
      '/keys',
      () => ({ role: 'user', subject: subject(), expiresAt: 253402300800000 }),
    ],
    ['a label with NUL', 'post', '/keys', () => ({ role: 'user', subject: subject(), label: 'a\u0000b' })],
    ['agent key, small expiresAt', 'post', `/conversations/${conv}/agent-keys`, () => ({ expiresAt: 5 })],
    ['agent key, future expiresAt', 'post', `/conversations/${conv}/agent-keys`, () => ({ expiresAt: future() })],
    ['scope null', 'post', `/conversations/${conv}/approvals/apr_none/approve`, () => ({ scope: null })],
    ['scope once', 'post', `/conversations/${conv}/approvals/apr_none/approve`, () => ({ scope: 'once' })],
    ['a reason with NUL', 'post', `/conversations/${conv}/approvals/apr_none/reject`, () => ({ reason: '\u0000' })],
    ['metadata key with a control character', 'post', '/conversations', () => ({ metadata: { 'a\u0001': 1 } })],
    ['a deny pattern with a space', 'post', '/conversations', () => ({ policy: { deny: ['a b'] } })],
    ['an empty deny pattern', 'post', '/conversations', () => ({ policy: { deny: [''] } })],
    ['a deny pattern', 'post', '/conversations', () => ({ policy: { deny: ['data-tool/*', '*/delete-*'] } })],
    ['257 deny patterns', 'post', '/conversations', () => ({ policy: { deny: Array(257).fill('a/b') } })],
    ['an action with NUL', 'post', `/conversations/${conv}/negotiate`, () => ({ action: 'list\u0000tools' })],
    ['level 4', 'put', `/conversations/${conv}/permissions/data-tool`, () => ({ level: 4 })],
  ];

  function bodySchema(method: string, path: string): Schema {
    const content = operationOf(method, path).requestBody?.content['application/json'];
    if (!content) throw new Error(`${method} ${path} takes no JSON body`);
    return content.schema;
  }

  it.each(probes)('%s', async (_label, method, path, body) => {
    const value = body();
    const why = invalidity(bodySchema(method, path), value);
    const res = await send(method, path).send(value as object);
    expectDeclared(res, method, path);
    if (why === undefined) expect([res.status, res.body.code]).not.toEqual([400, 'validation_failed']);
    else expect({ why, status: res.status }).toEqual({ why, status: 400 });
  });

  type QueryProbe = [label: string, path: string, parameter: string, value: string];
  const queries: QueryProbe[] = [
    ['prefix with NUL', `/conversations/${conv}/resources`, 'prefix', '\u0000'],
    ['prefix with a control character', `/conversations/${conv}/resources`, 'prefix', '\u0001a'],
    ['prefix with a lone surrogate', `/conversations/${conv}/resources`, 'prefix', '\ud800'],
    ['prefix with an emoji', `/conversations/${conv}/resources`, 'prefix', '\u{1F600}'],
    ['createdBy with NUL', `/conversations/${conv}/resources`, 'createdBy', 'x\u0000'],
    ['a cursor that is no base64url', `/conversations/${conv}/resources`, 'cursor', '!!'],
    ['a query with NUL', '/tools/definitions', 'query', 'read\u0000'],
    ['a conversation cursor that is no base64url', '/conversations', 'cursor', 'a b'],
  ];

  it.each(queries)('%s', async (_label, path, name, value) => {
    const parameter = operationOf('get', path).parameters?.find((p) => p.name === name && p.in === 'query');
    if (!parameter) throw new Error(`GET ${path} has no query parameter ${name}`);
    const why = invalidity(parameter.schema, value, name);
    // encodeURIComponent refuses a lone surrogate: it travels as its WTF-8 bytes, as a client's would.
    const encoded = /[\ud800-\udfff]/.test(value) && value.length === 1 ? '%ED%A0%80' : encodeURIComponent(value);
    const res = await send('get', `${path}?${name}=${encoded}`);
    expectDeclared(res, 'get', path);
    if (why === undefined) expect(res.status).toBe(200);
    else expect({ why, status: res.status }).toEqual({ why, status: 400 });
  });

  // Rules JSON Schema cannot state; the field's description must.
  it.each([
    ['expiresAt already past', 'CreateKeyBody', 'expiresAt', /in the future/],
    ['an agent key expiresAt already past', 'CreateAgentKeyBody', 'expiresAt', /in the future/],
    ['metadata keys with NUL', 'JsonObject', undefined, /NUL/],
    ['a metadata key __proto__', 'JsonObject', undefined, /`__proto__`/],
    ['a cursor of the right form the API never returned', 'Cursor', undefined, /Any\s+other value/],
  ] as const)('%s: stated in the description', (_label, component, property, rule) => {
    const schema = resolve(spec.components.schemas[component]!);
    const target = property === undefined ? schema : resolve(schema.properties![property]!);
    const description = `${target.description ?? ''} ${schema.properties?.[property ?? '']?.description ?? ''}`;
    expect(description).toMatch(rule);
  });

  it('...and the service does refuse them', async () => {
    const past = await send('post', '/keys').send({ role: 'user', subject: subject(), expiresAt: Date.now() - 1000 });
    expect([past.status, past.body.errors?.[0]?.message]).toEqual([400, 'must be in the future']);
    const nul = await send('post', '/conversations').send({ metadata: { 'a\u0000': 1 } });
    expect(nul.status).toBe(400);
    const proto = await send('post', '/conversations')
      .set('Content-Type', 'application/json')
      .send('{"metadata":{"__proto__":1}}');
    expect(proto.status).toBe(400);
    const cursor = await send('get', `/conversations/${conv}/resources?cursor=AA`);
    expect(cursor.status).toBe(400);
  });

  it("the spec's patterns are the service's own rules", () => {
    expect(resolve(spec.components.schemas.DenyPattern!).pattern).toBe(DENY_PATTERN_RE.source);
    expect(resolve(spec.components.schemas.CreateKeyBody!).properties!.subject!.pattern).toBe(SUBJECT_RE.source);
  });
});

describe('conditional PUT (RFC 9110 §13.1)', () => {
  const tags = [
    '*',
    '"1"',
    'W/"x"',
    '"5^"',
    '"1", "2"',
    'W/"1",W/"2"',
    '"1" ,\t"abc"',
    '""',
    'abc',
    '"1" "2"',
    '"1",',
    ', "1"',
    '*, "1"',
    'w/"1"',
    '"a"b"',
    '"1',
  ];

  it.each(tags)('the EntityTags pattern and the parser agree on %j', (value) => {
    const pattern = new RegExp(resolve(spec.components.schemas.EntityTags!).pattern!);
    let parsed = true;
    try {
      parsePrecondition(value, 'If-None-Match');
    } catch {
      parsed = false;
    }
    expect({ value, schemaValid: pattern.test(value) }).toEqual({ value, schemaValid: parsed });
  });

  const put = (path: string, header: string, value: string, data: unknown) =>
    send('put', path).set(header, value).send({ data });

  async function atVersion2(): Promise<string> {
    const path = `/conversations/${conv}/resources/${uniqueId('cond')}`;
    await send('put', path).send({ data: 1 }).expect(201);
    await send('put', path).send({ data: 2 }).expect(200);
    return path;
  }

  it.each([
    ['"5^"', 200],
    ['W/"x"', 200],
    ['"1"', 200],
    ['"1", "3"', 200],
    ['"2"', 412],
    ['W/"2"', 412],
    ['"1", "2"', 412],
    ['*', 412],
  ] as const)('If-None-Match: %s on a resource at version 2 → %i', async (value, status) => {
    const path = await atVersion2();
    const res = await put(path, 'If-None-Match', value, 'new');
    expectDeclared(res, 'put', path);
    expect(res.status).toBe(status);
    const now = (await send('get', path).expect(200)).body as { data: unknown; version: number };
    expect(now).toMatchObject(status === 200 ? { data: 'new', version: 3 } : { data: 2, version: 2 });
  });

  it.each(['"1"', 'W/"x"', '*'])('If-None-Match: %s on a missing resource creates it (201)', async (value) => {
    const path = `/conversations/${conv}/resources/${uniqueId('cond')}`;
    const res = await put(path, 'If-None-Match', value, 'first');
    expectDeclared(res, 'put', path);
    expect([res.status, res.body.version]).toEqual([201, 1]);
  });

  it('If-Match compares strongly: W/"2" matches nothing (412), "2" writes', async () => {
    const path = await atVersion2();
    expect((await put(path, 'If-Match', 'W/"2"', 'x')).status).toBe(412);
    expect((await put(path, 'If-Match', '"2"', 'x')).status).toBe(200);
  });

  it('If-Match and If-None-Match together: both must hold', async () => {
    const path = await atVersion2();
    const both = (m: string, n: string) =>
      send('put', path).set('If-Match', m).set('If-None-Match', n).send({ data: 'y' });
    expect((await both('"2"', '"2"')).status).toBe(412);
    expect((await both('"2"', '*')).status).toBe(412);
    expect((await both('*', '"2"')).status).toBe(412);
    expect((await both('"1", "2"', '"1"')).status).toBe(200);
    expect((await send('get', path).expect(200)).body).toMatchObject({ data: 'y', version: 3 });
  });
});
