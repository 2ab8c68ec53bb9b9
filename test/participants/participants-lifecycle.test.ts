/**
 * A participant's life on a replica (API.md, "Participants"): registered while
 * its upstream is down (201, `failing`, nothing pinned, participant_up 0),
 * pinned by its first successful listing once the upstream is up (`ready`,
 * participant_up 1, calls timed by outcome); loaded from the store by an app
 * that starts later, its tool there before its upstream answers; and a
 * replica whose SECRETS_KEY differs from the one the database knows refuses
 * to start, naming SECRETS_KEY.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { wireServices } from '../../src/bootstrap';
import { loadConfig } from '../../src/config';
import { openDatabase } from '../../src/db/database';
import { createLogger } from '../../src/logger';
import { PROJECT_ROOT } from '../../src/project-root';
import { TEST_ADMIN_TOKEN, TEST_AUTH_ENV, request } from '../support/auth';
import { createConversation } from '../support/identity';
import { freePort } from '../support/free-port';
import { uniqueId } from '../support/ids';
import { waitFor } from '../support/poll';
import { type TestApp, createTestApp } from '../support/test-app';
import { stopChild } from './support/upstreams';

const EVERYTHING = join(PROJECT_ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const NAME = `later-${Date.now().toString(36)}`;

let t: TestApp;
let port: number;
const children: Array<ReturnType<typeof spawn>> = [];

beforeAll(async () => {
  port = await freePort();
  t = await createTestApp();
}, 60_000);

afterAll(async () => {
  await t?.close();
  for (const child of children) await stopChild(child);
});

const admin = () => request(t.app, TEST_ADMIN_TOKEN);

async function metricsText(): Promise<string> {
  return (await admin().get('/metrics').expect(200)).text;
}

function startEverythingOn(p: number): Promise<void> {
  const child = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], {
    env: { PATH: process.env.PATH ?? '', PORT: String(p) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer): void => {
      out += d.toString();
      if (out.includes(`listening on port ${p}`)) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`server-everything exited (${code}): ${out}`)));
  });
}

describe('a participant whose upstream is down, then up', () => {
  it('registers as failing with nothing pinned, and participant_up says 0', async () => {
    const res = await admin()
      .post('/participants')
      .send({ name: NAME, transport: 'mcp-http', url: `http://127.0.0.1:${port}/mcp` });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ status: 'failing', actions: [], refreshedAt: null });
    expect(typeof res.body.lastError).toBe('string');
    expect(await metricsText()).toContain(`participant_up{participant="${NAME}"} 0`);
  });

  it('is pinned by its first listing once the upstream is up; calls are timed by outcome', async () => {
    await startEverythingOn(port);
    const res = await admin().post(`/participants/${NAME}/refresh`).expect(200);
    expect(res.body.status).toBe('ready');
    const echo = (res.body.actions as Array<{ name: string; status: string }>).find((a) => a.name === 'echo');
    expect(echo?.status).toBe('active');
    expect(await metricsText()).toContain(`participant_up{participant="${NAME}"} 1`);

    const c = uniqueId('conv');
    await createConversation(t.app, TEST_ADMIN_TOKEN, c);
    await admin().put(`/conversations/${c}/permissions/${NAME}`).send({ level: 3 }).expect(200);
    const call = await admin()
      .post(`/conversations/${c}/negotiate`)
      .send({ tool: NAME, action: 'echo', args: { message: 'timed' } });
    expect(call.body.success).toBe(true);
    expect(await metricsText()).toMatch(
      new RegExp(`participant_call_duration_seconds_count\\{participant="${NAME}",outcome="ok"\\} [1-9]`),
    );
  }, 60_000);

  it('an app started later loads it from the store and serves its tool', async () => {
    const later = await createTestApp({}, { replicaOf: t });
    try {
      const tools = await request(later.app, TEST_ADMIN_TOKEN).get('/tools').expect(200);
      expect((tools.body.tools as Array<{ name: string }>).map((x) => x.name)).toContain(NAME);
      await waitFor('the later app reaches the upstream', async () => {
        const p = await request(later.app, TEST_ADMIN_TOKEN).get(`/participants/${NAME}`).expect(200);
        return p.body.status === 'ready';
      });
    } finally {
      await later.close();
    }
  }, 60_000);
});

describe('the secrets key', () => {
  it('a replica whose SECRETS_KEY differs from the database’s refuses to start, naming SECRETS_KEY', async () => {
    const config = loadConfig({
      ...TEST_AUTH_ENV,
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      SECRETS_KEY: Buffer.alloc(32, 9).toString('base64'),
    });
    const db = openDatabase({ client: t.database.client, poolSize: 2, sharedSession: t.database.embedded });
    const { services, registry } = wireServices(config, createLogger('silent'), db);
    try {
      await expect(services.participants.start()).rejects.toThrow(/SECRETS_KEY/);
    } finally {
      await services.participants.close();
      await registry.close();
      await services.audit.close();
      await db.close();
    }
  });
});
