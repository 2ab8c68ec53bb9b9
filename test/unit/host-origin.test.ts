/**
 * The Host and Origin guard on a tiny app (behind `trust proxy`, as the
 * service is): which names and origins are answered, which refused 403.
 */
import { createServer } from 'node:http';
import { connect } from 'node:net';
import express, { type Express } from 'express';
import request from 'supertest';
import { type Config, ConfigError } from '../../src/config';
import { defaultAllowedHostsWarning, hostOriginGuard, isLoopbackAddress } from '../../src/http/host-origin';
import { close, listen } from '../support/raw-http';

type GuardConfig = Pick<Config, 'allowedOrigins' | 'allowedHosts' | 'host'>;

function guardedApp(config: Partial<GuardConfig> = {}): Express {
  const app = express();
  app.set('trust proxy', true);
  app.use(hostOriginGuard({ host: '127.0.0.1', allowedOrigins: [], allowedHosts: undefined, ...config }));
  app.use((_req, res) => {
    res.json({ ok: true });
  });
  return app;
}

const withHost = (app: Express, host: string, path = '/thing') => request(app).get(path).set('Host', host);

async function expectForbidden(res: request.Response, ...inDetail: string[]): Promise<void> {
  expect(res.status).toBe(403);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status: 403, code: 'forbidden' });
  for (const text of inDetail) expect(res.body.detail).toContain(text);
}

describe('Host', () => {
  it('answers only the loopback names when listening on loopback', async () => {
    const app = guardedApp({ host: '127.0.0.1' });
    for (const host of ['localhost:1234', 'localhost', '127.0.0.1', '[::1]:3000', 'LocalHost:80', '[0:0::1]']) {
      expect([host, (await withHost(app, host)).status]).toEqual([host, 200]);
    }
    await expectForbidden(await withHost(app, 'evil.example'), 'evil.example', 'ALLOWED_HOSTS');
    await expectForbidden(await withHost(app, 'evil.example:1234'));
    await expectForbidden(await withHost(app, '127.0.0.2'));
    await expectForbidden(await withHost(app, 'localhost.evil.example'));
  });

  it('counts ::1, localhost, other 127.x addresses and mapped ones as loopback, and nothing else', () => {
    for (const host of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1']) {
      expect([host, isLoopbackAddress(host)]).toEqual([host, true]);
    }
    for (const host of ['0.0.0.0', '::', '10.0.0.1', 'example.com', '::ffff:10.0.0.1', '128.0.0.1', '::2']) {
      expect([host, isLoopbackAddress(host)]).toEqual([host, false]);
    }
  });

  it('answers the listen address too when it is another loopback one', async () => {
    const app = guardedApp({ host: '127.0.0.2' });
    await withHost(app, '127.0.0.2:3000').expect(200);
    await withHost(app, 'localhost:3000').expect(200);
    await expectForbidden(await withHost(app, 'evil.example'));
  });

  it('answers any Host when listening on every address', async () => {
    for (const host of ['0.0.0.0', '::']) {
      const app = guardedApp({ host });
      await withHost(app, 'evil.example').expect(200);
      await withHost(app, '10.1.2.3:8080').expect(200);
    }
  });

  it('answers the names of ALLOWED_HOSTS: without a port on any port, with one on that port', async () => {
    const app = guardedApp({ host: '127.0.0.1', allowedHosts: ['api.example.com', 'internal.example:8080', '[::1]'] });
    for (const host of ['api.example.com', 'API.Example.COM:9999', 'internal.example:8080', '[::1]:1']) {
      expect([host, (await withHost(app, host)).status]).toEqual([host, 200]);
    }
    for (const host of ['internal.example:8081', 'internal.example', 'localhost', 'example.com', 'api.example.com.']) {
      expect([host, (await withHost(app, host)).status]).toEqual([host, 403]);
    }
  });

  it('takes a Host without a port as on the default port of the scheme', async () => {
    const app = guardedApp({ host: '0.0.0.0', allowedHosts: ['api.example.com:443'] });
    await withHost(app, 'api.example.com').set('X-Forwarded-Proto', 'https').expect(200);
    await withHost(app, 'api.example.com').expect(403);
  });

  it('refuses a request without a Host header', async () => {
    // Node answers an HTTP/1.1 request without Host 400 itself; HTTP/1.0 does not require one.
    const server = createServer(guardedApp({ host: '127.0.0.1' }));
    const port = await listen(server);
    try {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.end('GET /thing HTTP/1.0\r\n\r\n'));
        let text = '';
        socket.on('data', (c: Buffer) => (text += c.toString()));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      expect(answer).toMatch(/^HTTP\/1\.[01] 403 /);
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toMatchObject({
        code: 'forbidden',
        detail: 'A Host header is required',
      });
    } finally {
      await close(server);
    }
  });

  it('exempts the probes and the metrics scrape, and only them', async () => {
    const app = guardedApp({ host: '127.0.0.1', allowedHosts: ['api.example.com'] });
    await withHost(app, '10.1.2.3:8080', '/healthz').expect(200);
    await withHost(app, '10.1.2.3:8080', '/readyz').expect(200);
    // Prometheus scrapes by address as the probes do (Kubernetes: the pod IP as Host).
    await withHost(app, '10.1.2.3:8080', '/metrics').expect(200);
    for (const path of ['/docs/', '/openapi.json', '/metricsx', '/.well-known/oauth-protected-resource', '/healthzz']) {
      expect([path, (await withHost(app, '10.1.2.3:8080', path)).status]).toEqual([path, 403]);
    }
  });

  it('refuses to start with an entry that is not a host name', () => {
    for (const entry of ['http://example.com', 'a:b:c', 'example.com:99999', '[not-v6]']) {
      expect(() => hostOriginGuard({ host: '0.0.0.0', allowedOrigins: [], allowedHosts: [entry] })).toThrow(
        ConfigError,
      );
    }
    expect(() => hostOriginGuard({ host: '0.0.0.0', allowedOrigins: [], allowedHosts: ['x:1'] })).not.toThrow();
  });

  it('warns at start only when any Host is answered by default', () => {
    expect(defaultAllowedHostsWarning({ host: '0.0.0.0', allowedHosts: undefined })).toContain('ALLOWED_HOSTS');
    expect(defaultAllowedHostsWarning({ host: '::', allowedHosts: undefined })).toContain('ALLOWED_HOSTS');
    expect(defaultAllowedHostsWarning({ host: '127.0.0.1', allowedHosts: undefined })).toBeUndefined();
    expect(defaultAllowedHostsWarning({ host: '0.0.0.0', allowedHosts: ['api.example.com'] })).toBeUndefined();
  });
});

describe('Origin', () => {
  const fromOrigin = (app: Express, host: string, origin: string) =>
    request(app).post('/thing').set('Host', host).set('Origin', origin);

  it('answers requests without an Origin', async () => {
    await withHost(guardedApp(), 'localhost:3000').expect(200);
  });

  it("answers the service's own origin, whatever the case", async () => {
    for (const config of [{ host: '127.0.0.1' }, { host: '0.0.0.0' }]) {
      const app = guardedApp(config);
      await fromOrigin(app, 'localhost:3000', 'http://localhost:3000').expect(200);
      await fromOrigin(app, 'LOCALHOST:3000', 'http://localhost:3000').expect(200);
      await fromOrigin(app, 'localhost:3000', 'HTTP://LocalHost:3000').expect(200);
      await fromOrigin(app, '[::1]:3000', 'http://[::1]:3000').expect(200);
    }
  });

  it('takes the scheme from X-Forwarded-Proto behind the proxy', async () => {
    const app = guardedApp({ host: '0.0.0.0' });
    const behindTls = (origin: string) => fromOrigin(app, 'api.example.com', origin).set('X-Forwarded-Proto', 'https');
    await behindTls('https://api.example.com').expect(200);
    await expectForbidden(await behindTls('http://api.example.com'));
  });

  it('takes default ports as absent', async () => {
    const app = guardedApp({ host: '0.0.0.0' });
    await fromOrigin(app, 'localhost', 'http://localhost:80').expect(200);
    await fromOrigin(app, 'localhost:80', 'http://localhost').expect(200);
    await fromOrigin(app, 'api.example.com:443', 'https://api.example.com')
      .set('X-Forwarded-Proto', 'https')
      .expect(200);
    await expectForbidden(await fromOrigin(app, 'localhost:8080', 'http://localhost'));
  });

  it('refuses another origin, naming it and ALLOWED_ORIGINS', async () => {
    const app = guardedApp({ host: '0.0.0.0' });
    await expectForbidden(
      await fromOrigin(app, 'localhost:3000', 'https://evil.example'),
      '"https://evil.example"',
      'ALLOWED_ORIGINS',
    );
    await expectForbidden(await fromOrigin(app, 'localhost:3000', 'http://localhost:3001'));
    await expectForbidden(await fromOrigin(app, 'localhost:3000', 'https://localhost:3000'));
  });

  it('refuses the opaque origin null and what is not an origin', async () => {
    const app = guardedApp({ host: '0.0.0.0' });
    await expectForbidden(await fromOrigin(app, 'localhost:3000', 'null'), '"null"');
    await expectForbidden(await fromOrigin(app, 'localhost:3000', 'file:///etc/passwd'));
    await expectForbidden(await fromOrigin(app, 'localhost:3000', 'localhost:3000'));
  });

  it('cuts a long origin short in the detail', async () => {
    const origin = `https://${'a'.repeat(500)}.example`;
    const res = await fromOrigin(guardedApp({ host: '0.0.0.0' }), 'localhost:3000', origin);
    await expectForbidden(res);
    expect(res.body.detail).not.toContain(origin);
    expect(res.body.detail.length).toBeLessThan(250);
  });

  it('answers the origins of ALLOWED_ORIGINS, normalised', async () => {
    const app = guardedApp({
      host: '0.0.0.0',
      allowedOrigins: ['https://App.Example.com/', 'http://tools.example:8080'],
    });
    for (const origin of ['https://app.example.com', 'https://app.example.com:443', 'http://tools.example:8080']) {
      expect([origin, (await fromOrigin(app, 'localhost:3000', origin)).status]).toEqual([origin, 200]);
    }
    for (const origin of ['http://app.example.com', 'https://app.example.com:8443', 'http://tools.example']) {
      expect([origin, (await fromOrigin(app, 'localhost:3000', origin)).status]).toEqual([origin, 403]);
    }
  });

  it('does not let an allowed origin open another Host', async () => {
    const app = guardedApp({ host: '127.0.0.1', allowedOrigins: ['https://app.example.com'] });
    await expectForbidden(await fromOrigin(app, 'evil.example', 'https://app.example.com'), 'ALLOWED_HOSTS');
  });

  it('refuses to start with an entry that is not an origin', () => {
    for (const entry of ['null', 'app.example.com', 'file:///tmp']) {
      expect(() => hostOriginGuard({ host: '0.0.0.0', allowedOrigins: [entry], allowedHosts: undefined })).toThrow(
        ConfigError,
      );
    }
  });
});
