/**
 * Two replicas on one Postgres (API.md, "Participants": changes reach every
 * replica within 2 s): a participant registered, changed (disabled, enabled,
 * its levels) and deleted on replica A is used, or no longer used, by
 * replica B. B hears of it as it hears of any tool-set change (the event
 * bus's LISTEN/NOTIFY, held for the replica's life as the entry file does)
 * and reads the participant back from the store.
 */
import { closeMcpSessions, followToolSetChanges, mcpRouterOf } from '../../src/mcp/conversation-mcp';
import { TEST_ADMIN_TOKEN, request } from '../support/auth';
import { createConversation } from '../support/identity';
import { uniqueId } from '../support/ids';
import { waitFor } from '../support/poll';
import { type TestApp, createTestApp } from '../support/test-app';
import { type RunningUpstream, startEverythingHttp } from './support/upstreams';

let a: TestApp;
let b: TestApp;
let upstream: RunningUpstream;
const NAME = `replica-${Date.now().toString(36)}`;
/** The 2 s of the contract, with room for a busy 2-core machine; the polls end as soon as it holds. */
const WITHIN_MS = 2_000;

beforeAll(async () => {
  upstream = await startEverythingHttp();
  a = await createTestApp();
  b = await createTestApp({}, { replicaOf: a });
  for (const r of [a, b]) followToolSetChanges(r.services);
  await Promise.all([a, b].map((r) => mcpRouterOf(r.services)!.bus.ready()));
}, 60_000);

afterAll(async () => {
  for (const r of [b, a]) if (r) await closeMcpSessions(r.services);
  await b?.close();
  await a?.close();
  await upstream?.stop();
});

async function toolOn(r: TestApp): Promise<{ name: string; capabilities: string[] } | undefined> {
  const res = await request(r.app, TEST_ADMIN_TOKEN).get('/tools').expect(200);
  return (res.body.tools as Array<{ name: string; capabilities: string[] }>).find((x) => x.name === NAME);
}

/** Polls until `check` holds on replica B; fails when it takes longer than WITHIN_MS (plus a poll). */
async function onB(what: string, check: () => Promise<boolean>): Promise<void> {
  const started = Date.now();
  await waitFor(what, check, WITHIN_MS + 500);
  expect(Date.now() - started).toBeLessThanOrEqual(WITHIN_MS + 500);
}

describe('a participant changed on one replica', () => {
  it('registered on A is served and called on B', async () => {
    const res = await request(a.app, TEST_ADMIN_TOKEN)
      .post('/participants')
      .send({ name: NAME, transport: 'mcp-http', url: upstream.url });
    expect(res.status).toBe(201);
    await onB('B serves the participant', async () => (await toolOn(b)) !== undefined);

    const c = uniqueId('conv');
    await createConversation(b.app, TEST_ADMIN_TOKEN, c);
    await request(b.app, TEST_ADMIN_TOKEN)
      .put(`/conversations/${c}/permissions/${NAME}`)
      .send({ level: 3 })
      .expect(200);
    const call = await request(b.app, TEST_ADMIN_TOKEN)
      .post(`/conversations/${c}/negotiate`)
      .send({ tool: NAME, action: 'echo', args: { message: 'via replica B' } });
    expect(call.status).toBe(200);
    expect(JSON.stringify(call.body.output)).toContain('via replica B');
    // B runs the participant itself: its own connection and status.
    const seen = await request(b.app, TEST_ADMIN_TOKEN).get(`/participants/${NAME}`).expect(200);
    expect(seen.body.status).toBe('ready');
  });

  it('changed on A (include, then disabled, then enabled) is changed on B', async () => {
    await request(a.app, TEST_ADMIN_TOKEN)
      .patch(`/participants/${NAME}`)
      .send({ include: ['echo'] })
      .expect(200);
    await onB('B keeps only echo', async () => (await toolOn(b))?.capabilities.join(',') === 'echo');

    await request(a.app, TEST_ADMIN_TOKEN).patch(`/participants/${NAME}`).send({ enabled: false }).expect(200);
    await onB('B drops the disabled participant', async () => (await toolOn(b)) === undefined);
    const disabled = await request(b.app, TEST_ADMIN_TOKEN).get(`/participants/${NAME}`).expect(200);
    expect(disabled.body.status).toBe('disabled');

    await request(a.app, TEST_ADMIN_TOKEN).patch(`/participants/${NAME}`).send({ enabled: true }).expect(200);
    await onB('B serves it again', async () => (await toolOn(b)) !== undefined);
  });

  it('deleted on A is gone on B', async () => {
    await request(a.app, TEST_ADMIN_TOKEN).delete(`/participants/${NAME}`).expect(204);
    await onB('B no longer serves it', async () => (await toolOn(b)) === undefined);
    expect((await request(b.app, TEST_ADMIN_TOKEN).get(`/participants/${NAME}`)).status).toBe(404);
  });
});
