/**
 * The secrets grep (API.md, "Participants": secret values are never
 * returned, logged, traced, audited, put in metrics or echoed in an error).
 * Participants are registered with marker secrets in their headers and a
 * stdio child's environment, an owner stores marker credentials, and calls
 * are made to upstreams that echo what they were sent: in a result, an
 * error result, a JSON-RPC error, an HTTP error body, on stderr. Then every
 * response body, every log line, the audit of every conversation and of
 * `_system`, /metrics and every exported span are searched: no marker
 * anywhere.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Response } from 'supertest';
import { startTracing } from '../../src/observability/tracing';
import { setActiveTracing, type Tracing } from '../../src/observability/tracing-state';
import { TEST_ADMIN_TOKEN, request } from '../support/auth';
import { type MintedKey, as, createConversation, mintKey } from '../support/identity';
import { uniqueId } from '../support/ids';
import { waitFor } from '../support/poll';
import { type TestApp, createTestApp } from '../support/test-app';
import { type HttpUpstream, type RawAnswer, startRawServer } from './support/http-upstreams';
import { FIXTURES } from './support/upstreams';

jest.setTimeout(60_000);

const run = uniqueId('s').replace(/[^a-z0-9]/gi, '');
const HEADER_SECRET = `hdrsecret${run}`;
const KEY_SECRET = `keysecret${run}`;
const ENV_SECRET = `envsecret${run}`;
const OWNER_SECRET = `ownersecret${run}`;
const MARKERS = [HEADER_SECRET, KEY_SECRET, ENV_SECRET, OWNER_SECRET];

let t: TestApp;
let upstream: HttpUpstream;
let alice: MintedKey;
let bob: MintedKey;
let tracing: Tracing;
let receiver: Server;
const exported: string[] = [];
const responses: string[] = [];
const OTEL_VARS = [
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_BSP_SCHEDULE_DELAY',
];

function echoOf(headers: Record<string, unknown>): string {
  return `you sent ${JSON.stringify(headers)}`;
}

function answer(
  m: { id?: unknown; method?: string; params?: Record<string, unknown> },
  headers: Record<string, unknown>,
): RawAnswer | undefined {
  const reply = (body: unknown): RawAnswer => ({
    status: 200,
    contentType: 'application/json',
    body: JSON.stringify({ jsonrpc: '2.0', id: m.id, ...(body as object) }),
  });
  if (m.method === 'tools/list') {
    const names = ['echo', 'leak', 'rpc_leak', 'http_leak', 'reset'];
    return reply({
      result: { tools: names.map((name) => ({ name, description: `${name} tool`, inputSchema: { type: 'object' } })) },
    });
  }
  if (m.method !== 'tools/call') return undefined;
  const text = echoOf(headers);
  switch (m.params?.name) {
    case 'echo':
      return reply({ result: { content: [{ type: 'text', text }], structuredContent: { headers } } });
    case 'leak':
      return reply({ result: { content: [{ type: 'text', text }], isError: true } });
    case 'rpc_leak':
      return reply({ error: { code: -32602, message: text, data: headers } });
    case 'http_leak':
      return { status: 502, contentType: 'text/plain', body: text };
    default:
      return 'reset';
  }
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    void body(req).then((text) => {
      exported.push(text);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const port = (receiver.address() as AddressInfo).port;
  // The exporter and the batch processor read the process's environment: set for this file, restored after.
  Object.assign(process.env, {
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${port}/v1/traces`,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  });
  tracing = startTracing(process.env);
  setActiveTracing(tracing);
  upstream = await startRawServer(answer);
  t = await createTestApp({}, { captureLogs: true });
  alice = await mintKey(t.app, 'user', uniqueId('alice'));
  bob = await mintKey(t.app, 'user', uniqueId('bob'));
});

afterAll(async () => {
  await t?.close();
  await upstream?.close();
  setActiveTracing(undefined);
  await tracing?.shutdown();
  for (const k of OTEL_VARS) delete process.env[k];
  await new Promise((resolve) => receiver?.close(resolve));
});

function keep(res: Response): Response {
  responses.push(`${JSON.stringify(res.headers)} ${res.text}`);
  return res;
}

const admin = () => request(t.app, TEST_ADMIN_TOKEN);

it('no secret reaches a response, a log line, the audit, /metrics or a span', async () => {
  const http = `secret-http-${run}`.slice(0, 31).toLowerCase();
  const stdio = `secret-stdio-${run}`.slice(0, 31).toLowerCase();
  keep(
    await admin()
      .post('/participants')
      .send({
        name: http,
        transport: 'mcp-http',
        url: upstream.url,
        headers: { Authorization: `Bearer ${HEADER_SECRET}`, 'X-Api-Key': KEY_SECRET },
      })
      .expect(201),
  );
  keep(
    await admin()
      .post('/participants')
      .send({
        name: stdio,
        transport: 'mcp-stdio',
        command: process.execPath,
        args: [join(FIXTURES, 'hangs.mjs')],
        env: { SECRET: ENV_SECRET },
      })
      .expect(201),
  );
  keep(
    await as(t.app, alice.token)
      .put(`/participants/${http}/credentials/me`)
      .send({ headers: { Authorization: `Bearer ${OWNER_SECRET}` } })
      .expect(204),
  );

  // Alice has stored credentials (hers go upstream); Bob has none (the participant's go).
  const conversations: string[] = [];
  for (const who of [alice, bob]) {
    const c = uniqueId('conv');
    conversations.push(c);
    await createConversation(t.app, who.token, c);
    for (const tool of [http, stdio]) {
      keep(await as(t.app, who.token).put(`/conversations/${c}/permissions/${tool}`).send({ level: 3 }).expect(200));
    }
    for (const action of ['echo', 'leak', 'rpc-leak', 'http-leak', 'reset']) {
      keep(await as(t.app, who.token).post(`/conversations/${c}/negotiate`).send({ tool: http, action, args: {} }));
    }
    for (const action of ['echo', 'leak']) {
      keep(
        await as(t.app, who.token)
          .post(`/conversations/${c}/negotiate`)
          .send({ tool: stdio, action, args: { message: 'hi' } }),
      );
    }
  }
  // The upstreams did get the secrets (else the grep proves nothing).
  const sent = JSON.stringify(upstream.requests.map((r) => r.headers));
  expect(sent).toContain(HEADER_SECRET);
  expect(sent).toContain(OWNER_SECRET);
  await waitFor('the child wrote its stderr', () => t.logs.some((l) => String(l.msg).includes('my secret is')), 10_000);

  keep(await admin().post(`/participants/${http}/refresh`));
  keep(await admin().get('/participants').expect(200));
  for (const name of [http, stdio]) keep(await admin().get(`/participants/${name}`).expect(200));
  for (const c of conversations) keep(await admin().get(`/conversations/${c}/audit?limit=500`).expect(200));
  keep(await admin().get('/conversations/_system/audit?limit=500').expect(200));
  keep(await as(t.app, undefined).get('/metrics').expect(200));
  await waitFor('spans exported', () => exported.some((e) => e.includes('execute_tool')), 10_000);

  const places: Record<string, string> = {
    responses: responses.join('\n'),
    logs: JSON.stringify(t.logs),
    spans: exported.join('\n'),
  };
  expect(places.responses).toContain('participant_unavailable'); // the failures did happen
  expect(places.logs).toContain('[redacted]'); // the child's stderr was logged, redacted
  for (const [where, text] of Object.entries(places)) {
    for (const marker of MARKERS) {
      if (text.includes(marker))
        throw new Error(
          `${marker} found in ${where}: …${text.slice(Math.max(0, text.indexOf(marker) - 200), text.indexOf(marker) + 50)}…`,
        );
    }
  }
});
