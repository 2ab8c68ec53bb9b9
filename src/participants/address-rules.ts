/**
 * Which upstream addresses the service may reach (API.md "Participants",
 * Upstream addresses), against server-side request forgery: `http`/`https`
 * only, no credentials in the URL, and never a link-local or cloud metadata
 * address unless PARTICIPANT_ALLOWED_HOSTS lists it, also after redirects and
 * DNS resolution. Webhooks are meant to reuse these rules.
 *
 * Refused:
 * - 169.254.0.0/16 and fe80::/10 (link-local: AWS, GCP, Azure and OpenStack
 *   serve instance metadata at 169.254.169.254), fd00:ec2::254 (AWS's IPv6
 *   metadata), 100.100.100.200 (Alibaba Cloud's metadata);
 * - 0.0.0.0/8 and `::` (unspecified): not a host's address, yet on Linux a
 *   connection to it reaches the local machine, a classic way around address
 *   filters. Loopback itself (127.0.0.0/8, ::1, `localhost`) is allowed, so
 *   nothing legitimate needs the unspecified form;
 * - an IPv6 address that embeds a refused IPv4 one: IPv4-mapped
 *   (::ffff:169.254.169.254), IPv4-compatible (::169.254.169.254), NAT64
 *   (64:ff9b::/96) and 6to4 (2002::/16).
 * Private ranges (10/8, 192.168/16, fc00::/7 …) are allowed: upstreams on an
 * internal network are the normal case.
 *
 * createGuardedFetch checks the address a connection actually goes to: the
 * DNS answer is checked inside the connection's own lookup (undici's
 * `connect.lookup`), so a name cannot resolve to one address when checked and
 * another when connected. It follows redirects itself, checking every hop.
 */
import { promises as dns } from 'node:dns';
import type { LookupAddress } from 'node:dns';
import ipaddr from 'ipaddr.js';
import { Agent, type Dispatcher, fetch as undiciFetch } from 'undici';
import { followSignal } from './request-signal';
import { UpstreamUnavailableError } from './upstream';

export type AddressCheck = { ok: true; url: URL } | { ok: false; message: string };

const REFUSED_EXACT = new Set(['100.100.100.200', ipaddr.parse('fd00:ec2::254').toNormalizedString()]);
const REFUSED_V4_RANGES = new Set(['linkLocal', 'unspecified']);
const REFUSED_V6_RANGES = new Set(['linkLocal', 'unspecified']);

/** Syntax and literal-address rules for an upstream URL (registration, every redirect hop). Messages name the host only: a URL may carry a secret in its query. */
export function checkUpstreamUrl(url: string, allowedHosts: readonly string[]): AddressCheck {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, message: 'not a valid absolute URL' };
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return { ok: false, message: `only http and https URLs are allowed, not ${parsed.protocol.replace(/:$/, '')}` };
  }
  if (parsed.hostname === '') return { ok: false, message: 'the URL has no host' };
  if (parsed.username !== '' || parsed.password !== '') {
    return { ok: false, message: 'credentials in the URL are not allowed (send them as headers)' };
  }
  const host = normaliseHost(parsed.hostname);
  if (ipaddr.isValid(host) && isRefusedAddress(host) && !isAllowed(host, allowedHosts)) {
    return { ok: false, message: `address refused: ${host} is a link-local, metadata or unspecified address` };
  }
  return { ok: true, url: parsed };
}

/** Whether an IP address (v4 or v6, any textual form) is in a refused range. Not an address: false. */
export function isRefusedAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return isRefusedV4(parsed as ipaddr.IPv4);
  const v6 = parsed as ipaddr.IPv6;
  if (REFUSED_EXACT.has(v6.toNormalizedString()) || REFUSED_V6_RANGES.has(v6.range())) return true;
  const embedded = embeddedV4(v6);
  return embedded !== undefined && isRefusedV4(embedded);
}

/**
 * PARTICIPANT_ALLOWED_HOSTS: comma-separated host names or IP addresses that
 * may be reached even when they are (or resolve to) a refused address.
 * Entries are lowercased and IPv6 brackets dropped; a malformed entry is an
 * error naming the variable.
 */
export function parseAllowedHosts(value: string | undefined): string[] {
  if (value === undefined) return [];
  const hosts: string[] = [];
  for (const raw of value.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const host = normaliseHost(entry);
    if (!ipaddr.isValid(host) && !HOST_NAME_RE.test(host)) {
      throw new Error(
        `PARTICIPANT_ALLOWED_HOSTS: ${JSON.stringify(entry)} is not a host name or IP address (no scheme, port or path)`,
      );
    }
    if (!hosts.includes(host)) hosts.push(host);
  }
  return hosts;
}

/** A DNS resolver: every address of a host name. Defaults to the system's (dns.lookup, as a connection would use). */
export type HostLookup = (hostname: string) => Promise<readonly LookupAddress[]>;

export interface GuardedFetchOptions {
  allowedHosts: readonly string[];
  /** Redirects followed at most; default 5. */
  maxRedirects?: number;
  /** For tests: resolve names without DNS. */
  lookup?: HostLookup;
}

/**
 * A fetch bound to its own connection pool; `close()` ends the pool's connections.
 * `dispatcher` and `checkUrl` are for a request made without fetch (undici's
 * dispatcher API, the mcp-http hot path): the same pool, whose connections
 * check the addresses a name resolves to, and the same URL rules, which the
 * caller applies before sending (it follows no redirect itself).
 */
export type GuardedFetch = typeof fetch & {
  close(): Promise<void>;
  readonly dispatcher: Dispatcher;
  checkUrl(url: string): AddressCheck;
};

const DEFAULT_MAX_REDIRECTS = 5;

/**
 * A fetch that reaches only allowed addresses: the URL and every redirect
 * hop pass checkUpstreamUrl, and a name whose DNS answer holds a refused
 * address is refused when connecting. Refusals throw UpstreamUnavailableError
 * (503 participant_unavailable); other network failures reject as fetch
 * does (TypeError with a cause), an abort as an AbortError. The response
 * streams (SSE bodies work) and the request's signal aborts it.
 */
export function createGuardedFetch(options: GuardedFetchOptions): GuardedFetch {
  const allowedHosts = options.allowedHosts.map(normaliseHost);
  const maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const resolve = options.lookup ?? systemLookup;
  const agent = new Agent({ connect: { lookup: guardedLookup(resolve, allowedHosts) } });

  const guarded = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    let request = await toHop(input, init);
    for (let redirects = 0; ; redirects++) {
      const checked = checkUpstreamUrl(request.url, allowedHosts);
      if (!checked.ok) throw new UpstreamUnavailableError(checked.message);
      const response = await send(agent, checked.url, request);
      const location = isRedirect(response.status) ? response.headers.get('location') : null;
      if (location === null) return response;
      await response.body?.cancel().catch(() => undefined);
      if (redirects >= maxRedirects) {
        throw new UpstreamUnavailableError(`too many redirects from ${checked.url.host} (at most ${maxRedirects})`);
      }
      request = nextHop(request, response.status, new URL(location, checked.url));
    }
  };
  return Object.assign(guarded, {
    close: () => agent.close(),
    dispatcher: agent,
    checkUrl: (url: string) => checkUpstreamUrl(url, allowedHosts),
  });
}

const HOST_NAME_RE = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** Lowercase, no IPv6 brackets, no trailing dot; IP addresses in one normal form. */
function normaliseHost(host: string): string {
  const bare = host
    .trim()
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
  return ipaddr.isValid(bare) ? ipaddr.parse(bare).toString() : bare;
}

function isAllowed(host: string, allowedHosts: readonly string[]): boolean {
  const wanted = normaliseHost(host);
  return allowedHosts.some((allowed) => normaliseHost(allowed) === wanted);
}

function isRefusedV4(address: ipaddr.IPv4): boolean {
  return REFUSED_V4_RANGES.has(address.range()) || REFUSED_EXACT.has(address.toString());
}

/** The IPv4 address an IPv6 one carries: mapped, compatible (::a.b.c.d), NAT64 or 6to4. */
function embeddedV4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const p = address.parts;
  const fromWords = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  if (address.isIPv4MappedAddress()) return address.toIPv4Address();
  const range = address.range();
  if (range === 'rfc6052') return fromWords(p[6]!, p[7]!);
  if (range === '6to4') return fromWords(p[1]!, p[2]!);
  if (p.slice(0, 6).every((w) => w === 0) && (p[6] !== 0 || p[7]! > 1)) return fromWords(p[6]!, p[7]!);
  return undefined;
}

async function systemLookup(hostname: string): Promise<readonly LookupAddress[]> {
  return dns.lookup(hostname, { all: true });
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** net.connect's `lookup`: resolves, refuses when any address is refused, hands the checked addresses to the socket. */
function guardedLookup(resolve: HostLookup, allowedHosts: readonly string[]) {
  return (hostname: string, opts: { family?: number | string; all?: boolean }, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        const host = normaliseHost(hostname);
        const refused = addresses.some((a) => isRefusedAddress(a.address) && !isAllowed(a.address, allowedHosts));
        if (refused && !isAllowed(host, allowedHosts)) {
          const msg = `address refused: ${host} resolves to a link-local, metadata or unspecified address`;
          callback(new UpstreamUnavailableError(msg), '');
          return;
        }
        const family = opts.family === 'IPv6' ? 6 : opts.family === 'IPv4' ? 4 : Number(opts.family ?? 0);
        const usable = addresses.filter((a) => family === 0 || a.family === family);
        if (usable.length === 0) {
          callback(Object.assign(new Error(`no address for ${host}`), { code: 'ENOTFOUND' }), '');
        } else if (opts.all) {
          callback(null, [...usable]);
        } else {
          callback(null, usable[0]!.address, usable[0]!.family);
        }
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };
}

/** One request as sent on one hop. */
interface Hop {
  url: string;
  method: string;
  headers: Headers;
  body: RequestInit['body'];
  signal: AbortSignal | undefined;
  init: RequestInit;
}

async function toHop(input: string | URL | Request, init: RequestInit = {}): Promise<Hop> {
  if (typeof input === 'string' || input instanceof URL) {
    const url = typeof input === 'string' ? input : input.href;
    const method = (init.method ?? 'GET').toUpperCase();
    return { url, method, headers: new Headers(init.headers), body: init.body, signal: init.signal ?? undefined, init };
  }
  const body = init.body ?? (input.body ? await input.arrayBuffer() : undefined);
  return {
    url: input.url,
    method: (init.method ?? input.method).toUpperCase(),
    headers: new Headers(init.headers ?? input.headers),
    body,
    signal: init.signal ?? input.signal,
    init,
  };
}

async function send(agent: Agent, url: URL, hop: Hop): Promise<Response> {
  const followed = followSignal(agent, hop.signal);
  try {
    const response = await undiciFetch(url, {
      ...(hop.init as object),
      method: hop.method,
      headers: [...hop.headers.entries()],
      body: hop.body as never,
      signal: followed.signal,
      redirect: 'manual',
      dispatcher: followed.dispatcher,
      // A streamed request body must say so (fetch's rule); harmless otherwise.
      duplex: 'half',
    });
    return response;
  } catch (err) {
    followed.release();
    throw refusalIn(err) ?? err;
  }
}

/** The refusal our lookup raised, wherever fetch wrapped it ("fetch failed" with a cause). */
function refusalIn(err: unknown): UpstreamUnavailableError | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof UpstreamUnavailableError) return e;
  }
  return undefined;
}

function isRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

/** Headers kept when a redirect leaves the origin: none that could carry a credential. */
const CROSS_ORIGIN_HEADERS = new Set([
  'accept',
  'accept-language',
  'content-language',
  'content-type',
  'user-agent',
  'mcp-protocol-version',
]);
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language'];

/** The next hop as fetch's redirect rules shape it, minus every credential-bearing header when the origin changes. */
function nextHop(hop: Hop, status: number, location: URL): Hop {
  const toGet = status === 303 ? hop.method !== 'HEAD' : (status === 301 || status === 302) && hop.method === 'POST';
  const headers = new Headers(hop.headers);
  if (toGet) for (const name of BODY_HEADERS) headers.delete(name);
  if (!toGet && hop.body instanceof ReadableStream) {
    throw new UpstreamUnavailableError(`a ${status} redirect cannot resend a streamed request body`);
  }
  if (location.origin !== new URL(hop.url).origin) {
    for (const name of [...headers.keys()]) if (!CROSS_ORIGIN_HEADERS.has(name)) headers.delete(name);
  }
  return {
    ...hop,
    url: location.href,
    method: toGet ? 'GET' : hop.method,
    headers,
    body: toGet ? undefined : hop.body,
  };
}
