/**
 * Browsers and DNS rebinding (API.md, Identity and access): which Host and
 * Origin headers the service answers.
 *
 * - Host: when a list is in force, the Host header must name the service.
 *   That stops DNS rebinding: a page whose name the attacker re-points to
 *   this address still sends its own name as Host. The list is ALLOWED_HOSTS,
 *   or unset the loopback names when the service listens on loopback (it
 *   cannot be reached by any other name then), or unset elsewhere no list.
 *   Only the Host header counts, never X-Forwarded-Host: a rebound page is
 *   same-origin with itself and may set that header freely.
 * - Origin: a request from a browser page (Origin present) must come from the
 *   service's own origin (Swagger UI at /docs) or one of ALLOWED_ORIGINS.
 *
 * /healthz, /readyz and /metrics are exempt from the Host check:
 * orchestrators probe and Prometheus scrapes by address (Kubernetes sends the
 * pod IP as Host), and they tell nothing worth rebinding for (metrics are
 * counts by tool, action and outcome: no conversation, resource or key). Mount the guard at the app's root, since it
 * recognises the probes by req.path.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { Request, RequestHandler } from 'express';
import { type Config, ConfigError } from '../config';
import { sendProblem } from './middleware';

type GuardConfig = Pick<Config, 'allowedOrigins' | 'allowedHosts' | 'host'>;

/** A Host value or an ALLOWED_HOSTS entry: a lower-case name (IPv6 in brackets) and an optional port. */
interface HostName {
  name: string;
  port: number | undefined;
}

const PROBES = new Set(['/healthz', '/readyz', '/metrics']);

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];

const HOST_RE = /^(\[[0-9a-f:.]+\]|[^\s[\]:/?#@\\]+)(?::(\d{1,5}))?$/;

/** `name`, `name:port`, `[v6]` or `[v6]:port`; undefined when it is none of these. */
function parseHost(value: string): HostName | undefined {
  const m = HOST_RE.exec(value.toLowerCase());
  if (!m) return undefined;
  let name = m[1]!;
  if (name.startsWith('[')) {
    if (!isIPv6(name.slice(1, -1))) return undefined;
    name = new URL(`http://${name}`).hostname; // one spelling per address: [0:0::1] is [::1]
  }
  const port = m[2] === undefined ? undefined : Number(m[2]);
  if (port !== undefined && port > 65535) return undefined;
  return { name, port };
}

/** Whether the listen address (HOST) is a loopback one: 127.x.x.x, ::1 or localhost. */
export function isLoopbackAddress(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  if (isIPv4(h)) return h.startsWith('127.');
  if (isIPv6(h)) {
    const canonical = new URL(`http://[${h}]`).hostname;
    // ::1, or an IPv4-mapped 127.x.x.x (which the URL spells in hex).
    return canonical === '[::1]' || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(canonical);
  }
  return false;
}

/** The Host names in force; undefined when any Host is answered. */
function allowedHostNames(config: GuardConfig): HostName[] | undefined {
  if (config.allowedHosts !== undefined) {
    return config.allowedHosts.map((entry) => {
      const parsed = parseHost(entry);
      if (!parsed) {
        throw new ConfigError([
          `ALLOWED_HOSTS: ${JSON.stringify(entry)} is not a host name, optionally with :port (IPv6 in brackets)`,
        ]);
      }
      return parsed;
    });
  }
  if (!isLoopbackAddress(config.host)) return undefined;
  const names = LOOPBACK_NAMES.map((n) => parseHost(n)!);
  // Listening on another loopback address (127.0.0.2): clients reach it by that address too.
  const own = parseHost(isIPv6(config.host) ? `[${config.host}]` : config.host);
  if (own && !names.some((n) => n.name === own.name)) names.push({ name: own.name, port: undefined });
  return names;
}

/** When ALLOWED_HOSTS is unset and the listen address is not loopback: the start's warning. */
export function defaultAllowedHostsWarning(config: Pick<Config, 'allowedHosts' | 'host'>): string | undefined {
  if (config.allowedHosts !== undefined || isLoopbackAddress(config.host)) return undefined;
  return (
    `ALLOWED_HOSTS is unset and HOST (${config.host}) is not a loopback address: requests for any Host name are ` +
    'answered, which leaves DNS rebinding open; set ALLOWED_HOSTS to the names clients use to reach the service'
  );
}

function defaultPort(protocol: string): number | undefined {
  return protocol === 'https' ? 443 : protocol === 'http' ? 80 : undefined;
}

/** An entry without a port matches any port; a Host without one has the scheme's default. */
function hostMatches(entry: HostName, host: HostName, req: Request): boolean {
  if (entry.name !== host.name) return false;
  // req.protocol only when needed: behind a trusted proxy it reads X-Forwarded-Proto.
  return entry.port === undefined || entry.port === (host.port ?? defaultPort(req.protocol));
}

/** `scheme://host[:port]`, lower case, without the scheme's default port; undefined for `null` and non-origins. */
function normalizeOrigin(value: string): string | undefined {
  if (!URL.canParse(value)) return undefined;
  const url = new URL(value);
  if (url.host === '') return undefined;
  return `${url.protocol}//${url.host}`.toLowerCase();
}

/** A client's value in a problem's detail: quoted and cut short. */
function shown(value: string): string {
  return JSON.stringify(value.length > 100 ? `${value.slice(0, 100)}…` : value);
}

/** The origin this request was made to: its scheme (X-Forwarded-Proto behind a trusted proxy) and its Host. */
function ownOrigin(req: Request): string | undefined {
  const host = req.headers.host;
  if (host === undefined || !parseHost(host)) return undefined;
  return normalizeOrigin(`${req.protocol}://${host}`);
}

/** Refuses (403 forbidden) a Host outside the allowed names and an Origin neither the service's own nor allowed. */
export function hostOriginGuard(config: GuardConfig): RequestHandler {
  const hosts = allowedHostNames(config);
  const origins = new Set(
    config.allowedOrigins.map((entry) => {
      const origin = normalizeOrigin(entry);
      if (origin === undefined) {
        throw new ConfigError([`ALLOWED_ORIGINS: ${JSON.stringify(entry)} is not an origin (scheme://host[:port])`]);
      }
      return origin;
    }),
  );
  // Clients send one Host value again and again: each is parsed once (a bounded map, emptied when full).
  const parsedHosts = new Map<string, HostName | null>();
  const parsedHost = (value: string): HostName | undefined => {
    let parsed = parsedHosts.get(value);
    if (parsed === undefined) {
      parsed = parseHost(value) ?? null;
      if (parsedHosts.size >= 1024) parsedHosts.clear();
      parsedHosts.set(value, parsed);
    }
    return parsed ?? undefined;
  };
  return (req, res, next) => {
    const hostHeader = req.headers.host;
    if (hosts !== undefined && !PROBES.has(req.path)) {
      const host = hostHeader === undefined ? undefined : parsedHost(hostHeader);
      if (!host || !hosts.some((entry) => hostMatches(entry, host, req))) {
        const detail =
          hostHeader === undefined
            ? 'A Host header is required'
            : `Host ${shown(hostHeader)} is not a name of this service; the names are configured in ALLOWED_HOSTS`;
        return sendProblem(res, 'forbidden', detail);
      }
    }
    const origin = req.headers.origin;
    if (origin !== undefined) {
      const normalized = normalizeOrigin(origin);
      if (normalized === undefined || (normalized !== ownOrigin(req) && !origins.has(normalized))) {
        return sendProblem(
          res,
          'forbidden',
          `Origin ${shown(origin)} is not allowed; other origins than the service's own are configured in ALLOWED_ORIGINS`,
        );
      }
    }
    next();
  };
}
