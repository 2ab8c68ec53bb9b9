import { getEventListeners, once } from 'node:events';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type GuardedFetch,
  type HostLookup,
  checkUpstreamUrl,
  createGuardedFetch,
  isRefusedAddress,
  parseAllowedHosts,
} from '../../src/participants/address-rules';
import { UpstreamUnavailableError } from '../../src/participants/upstream';

describe('checkUpstreamUrl', () => {
  it.each([
    'http://127.0.0.1:8080/mcp',
    'https://api.example.com/v1?key=x',
    'http://localhost:3001/',
    'http://10.1.2.3/',
    'http://192.168.0.10/',
    'http://[::1]:8080/',
    'http://[fd12:3456::1]/',
    'http://169.255.0.1/',
    'http://metadata.google.internal/',
  ])('accepts %s', (url) => {
    const result = checkUpstreamUrl(url, []);
    expect(result).toEqual({ ok: true, url: new URL(url) });
  });

  it.each([
    ['not a url', /valid absolute URL/],
    ['/relative/path', /valid absolute URL/],
    ['ftp://files.example.com/', /only http and https.*ftp/],
    ['file:///etc/passwd', /only http and https/],
    ['javascript:alert(1)', /only http and https/],
    ['http://user:pw@example.com/', /credentials/],
    ['http://user@example.com/', /credentials/],
    ['http://169.254.169.254/latest/meta-data/', /address refused: 169\.254\.169\.254/],
    ['http://169.254.0.1/', /address refused/],
    ['http://2852039166/', /address refused: 169\.254\.169\.254/],
    ['http://0xa9.0xfe.0xa9.0xfe/', /address refused: 169\.254\.169\.254/],
    ['http://169.254.169.254./', /address refused/],
    ['http://[fe80::1]/', /address refused: fe80::1/],
    ['http://[FEBF::1]:8080/', /address refused/],
    ['http://[fd00:ec2::254]/', /address refused/],
    ['http://[::ffff:169.254.169.254]/', /address refused/],
    ['http://[::ffff:a9fe:1]/', /address refused/],
    ['http://[64:ff9b::169.254.169.254]/', /address refused/],
    ['http://[2002:a9fe:a9fe::1]/', /address refused/],
    ['http://100.100.100.200/', /address refused/],
    ['http://0.0.0.0:8080/', /address refused: 0\.0\.0\.0/],
    ['http://0/', /address refused/],
    ['http://[::]/', /address refused/],
  ])('refuses %s', (url, message) => {
    const result = checkUpstreamUrl(url, []);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toMatch(message);
  });

  it('never puts the path or query in a message (they may hold a secret)', () => {
    const result = checkUpstreamUrl('http://169.254.169.254/x?token=s3cr3t', []);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).not.toContain('s3cr3t');
  });

  it('lets a refused address through when PARTICIPANT_ALLOWED_HOSTS lists it, in any of its forms', () => {
    expect(checkUpstreamUrl('http://169.254.169.254/', ['169.254.169.254']).ok).toBe(true);
    expect(checkUpstreamUrl('http://[FE80::0001]/', ['fe80::1']).ok).toBe(true);
    expect(checkUpstreamUrl('http://[fe80::1]/', ['[fe80::1]']).ok).toBe(true);
    expect(checkUpstreamUrl('http://169.254.169.254/', ['169.254.169.253']).ok).toBe(false);
  });
});

describe('isRefusedAddress', () => {
  it.each([
    ['169.254.169.254', true],
    ['fe80::abcd', true],
    ['fd00:ec2::254', true],
    ['::ffff:169.254.1.1', true],
    ['0.0.0.0', true],
    ['127.0.0.1', false],
    ['::1', false],
    ['::ffff:127.0.0.1', false],
    ['10.0.0.1', false],
    ['fd00:ec2::253', false],
    ['not an address', false],
  ])('%s → %s', (address, refused) => {
    expect(isRefusedAddress(address)).toBe(refused);
  });
});

describe('parseAllowedHosts', () => {
  it('splits, trims, lowercases and normalises', () => {
    expect(parseAllowedHosts(undefined)).toEqual([]);
    expect(parseAllowedHosts('')).toEqual([]);
    expect(parseAllowedHosts(' Metadata.Internal , 169.254.169.254,[FE80::1],, fe80::1 ')).toEqual([
      'metadata.internal',
      '169.254.169.254',
      'fe80::1',
    ]);
  });

  it.each(['http://host', 'host:8080', 'host/path', 'a b', '-bad-'])('refuses %j, naming the variable', (entry) => {
    expect(() => parseAllowedHosts(`ok.example, ${entry}`)).toThrow(/PARTICIPANT_ALLOWED_HOSTS/);
  });
});

/** A local upstream: records each request; routes answer by path. */
interface Upstream {
  origin: string;
  port: number;
  requests: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
  close(): Promise<void>;
}

type Route = (req: IncomingMessage, res: ServerResponse, body: string) => void;

async function startUpstream(routes: Record<string, Route>): Promise<Upstream> {
  const requests: Upstream['requests'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      const route = routes[new URL(req.url!, 'http://x').pathname];
      if (route) route(req, res, body);
      else res.writeHead(404).end('no route');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

const redirectTo =
  (location: string, status = 302): Route =>
  (_req, res) =>
    res.writeHead(status, { location }).end();

/** A resolver for made-up names; anything else goes to the system's. */
const fakeDns =
  (names: Record<string, string[]>): HostLookup =>
  (hostname) => {
    const addresses = names[hostname];
    if (!addresses) return Promise.reject(Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }));
    return Promise.resolve(addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
  };

async function refusal(p: Promise<unknown>): Promise<UpstreamUnavailableError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UpstreamUnavailableError);
  return err as UpstreamUnavailableError;
}

describe('createGuardedFetch', () => {
  let upstream: Upstream;
  let guarded: GuardedFetch;
  const fetches: GuardedFetch[] = [];
  const make = (options: Parameters<typeof createGuardedFetch>[0]) => {
    const f = createGuardedFetch(options);
    fetches.push(f);
    return f;
  };

  beforeAll(async () => {
    upstream = await startUpstream({
      '/hello': (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('hello'),
      '/echo': (req, res, body) =>
        res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ method: req.method, body })),
      '/sse': (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: message\ndata: {"n":1}\n\n');
        // Kept open: the client reads the first event, then aborts.
      },
      '/to-hello': redirectTo('/hello'),
      '/chain-1': redirectTo('/chain-2', 301),
      '/chain-2': redirectTo('/chain-3', 307),
      '/chain-3': redirectTo('http://169.254.169.254/latest/meta-data/'),
      '/to-named-metadata': (_req, res) => res.writeHead(302, { location: 'http://metadata.test/' }).end(),
      '/loop': redirectTo('/loop'),
      '/post-303': redirectTo('/echo', 303),
      '/post-307': redirectTo('/echo', 307),
      '/to-other-origin': (req, res) =>
        res.writeHead(302, { location: `http://localhost:${new URL(`http://${req.headers.host}`).port}/hello` }).end(),
      '/to-ftp': redirectTo('ftp://127.0.0.1/file'),
    });
    guarded = make({ allowedHosts: [] });
  });

  afterAll(async () => {
    await Promise.all(fetches.map((f) => f.close()));
    await upstream.close();
  });

  beforeEach(() => (upstream.requests.length = 0));

  it('reaches a loopback upstream, with method, headers and body', async () => {
    const res = await guarded(`${upstream.origin}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
      body: JSON.stringify({ a: 1 }),
    });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ method: 'POST', body: '{"a":1}' });
    expect(upstream.requests[0]!.headers.authorization).toBe('Bearer t');
  });

  it('takes a URL object and a Request', async () => {
    expect(await (await guarded(new URL(`${upstream.origin}/hello`))).text()).toBe('hello');
    const req = new Request(`${upstream.origin}/echo`, { method: 'PUT', body: 'x' });
    expect(await (await guarded(req)).json()).toEqual({ method: 'PUT', body: 'x' });
  });

  it('streams a response body (SSE) and aborts it with the signal', async () => {
    const controller = new AbortController();
    const res = await guarded(`${upstream.origin}/sse`, {
      headers: { accept: 'text/event-stream' },
      signal: controller.signal,
    });
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('data: {"n":1}');
    controller.abort();
    await expect(reader.read()).rejects.toThrow();
  });

  it('leaves no listener on a long-lived signal once its responses have ended (the MCP SDK reuses one)', async () => {
    const controller = new AbortController();
    for (let i = 0; i < 20; i++) {
      expect(await (await guarded(`${upstream.origin}/hello`, { signal: controller.signal })).text()).toBe('hello');
    }
    const streaming = await guarded(`${upstream.origin}/sse`, { signal: controller.signal });
    const reader = streaming.body!.getReader();
    await reader.read();
    // Only the request still in flight listens; the twenty that ended let go.
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort();
    await expect(reader.read()).rejects.toThrow();
  });

  it('follows a redirect within the limit', async () => {
    const res = await guarded(`${upstream.origin}/to-hello`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('hello');
    expect(res.url).toBe(`${upstream.origin}/hello`);
  });

  it('refuses a redirect chain that ends at a metadata address, without reaching it', async () => {
    const err = await refusal(guarded(`${upstream.origin}/chain-1`));
    expect(err.message).toMatch(/address refused: 169\.254\.169\.254/);
    expect(upstream.requests.map((r) => r.url)).toEqual(['/chain-1', '/chain-2', '/chain-3']);
  });

  it('refuses a redirect to another scheme', async () => {
    expect((await refusal(guarded(`${upstream.origin}/to-ftp`))).message).toMatch(/only http and https/);
  });

  it('stops after maxRedirects', async () => {
    const limited = make({ allowedHosts: [], maxRedirects: 3 });
    expect((await refusal(limited(`${upstream.origin}/loop`))).message).toMatch(/too many redirects.*at most 3/);
    expect(upstream.requests).toHaveLength(4);
  });

  it('turns POST into GET on 303 and keeps method and body on 307', async () => {
    const init = { method: 'POST', body: 'payload', headers: { 'content-type': 'text/plain' } };
    expect(await (await guarded(`${upstream.origin}/post-303`, init)).json()).toEqual({ method: 'GET', body: '' });
    expect(upstream.requests[1]!.headers['content-type']).toBeUndefined();
    expect(await (await guarded(`${upstream.origin}/post-307`, init)).json()).toEqual({
      method: 'POST',
      body: 'payload',
    });
  });

  it('drops credential-bearing headers when a redirect leaves the origin', async () => {
    const res = await guarded(`${upstream.origin}/to-other-origin`, {
      headers: { authorization: 'Bearer t', 'x-api-key': 'k', cookie: 'c=1', accept: 'text/plain' },
    });
    expect(await res.text()).toBe('hello');
    const [first, second] = upstream.requests;
    expect(first!.headers['x-api-key']).toBe('k');
    expect(second!.headers.host).toBe(`localhost:${upstream.port}`);
    expect(second!.headers.authorization).toBeUndefined();
    expect(second!.headers['x-api-key']).toBeUndefined();
    expect(second!.headers.cookie).toBeUndefined();
    expect(second!.headers.accept).toBe('text/plain');
  });

  it('refuses a literal refused address before connecting', async () => {
    const err = await refusal(guarded('http://[fd00:ec2::254]/latest'));
    expect(err.message).toMatch(/address refused/);
  });

  describe('names resolved by DNS (an injected resolver)', () => {
    const dnsNames = fakeDns({
      'metadata.test': ['169.254.169.254'],
      'mapped.test': ['::ffff:169.254.169.254'],
      'mixed.test': ['127.0.0.1', '169.254.169.254'],
      'upstream.test': ['127.0.0.1'],
      'zero.test': ['0.0.0.0'],
    });

    it.each(['metadata.test', 'mapped.test', 'mixed.test'])('refuses %s at connect time', async (host) => {
      const f = make({ allowedHosts: [], lookup: dnsNames });
      const err = await refusal(f(`http://${host}:${upstream.port}/hello`));
      expect(err.message).toBe(`address refused: ${host} resolves to a link-local, metadata or unspecified address`);
      expect(upstream.requests).toHaveLength(0);
    });

    it('connects to the address it checked', async () => {
      const f = make({ allowedHosts: [], lookup: dnsNames });
      const res = await f(`http://upstream.test:${upstream.port}/hello`);
      expect(await res.text()).toBe('hello');
      expect(upstream.requests[0]!.headers.host).toBe(`upstream.test:${upstream.port}`);
    });

    it('refuses a redirect to a name that resolves to a metadata address', async () => {
      const f = make({ allowedHosts: [], lookup: dnsNames });
      const err = await refusal(f(`${upstream.origin}/to-named-metadata`));
      expect(err.message).toMatch(/metadata\.test resolves to/);
    });

    it('lets a refused address through when its name or the address is allowed', async () => {
      // 0.0.0.0 is refused, yet on Linux it reaches the local upstream: a refused address one can really connect to.
      const refused = make({ allowedHosts: [], lookup: dnsNames });
      await refusal(refused(`http://zero.test:${upstream.port}/hello`));
      await refusal(refused(`http://0.0.0.0:${upstream.port}/hello`));
      for (const allowed of [['zero.test'], ['0.0.0.0']]) {
        const f = make({ allowedHosts: allowed, lookup: dnsNames });
        expect(await (await f(`http://zero.test:${upstream.port}/hello`)).text()).toBe('hello');
      }
      const literal = make({ allowedHosts: ['0.0.0.0'] });
      expect(await (await literal(`http://0.0.0.0:${upstream.port}/hello`)).text()).toBe('hello');
    });

    it('passes other DNS failures on as fetch does', async () => {
      const f = make({ allowedHosts: [], lookup: dnsNames });
      const err = await f('http://unknown.test/').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TypeError);
      expect(err).not.toBeInstanceOf(UpstreamUnavailableError);
    });
  });

  it('resolves with the system resolver by default (localhost)', async () => {
    expect(await (await guarded(`http://localhost:${upstream.port}/hello`)).text()).toBe('hello');
  });
});
