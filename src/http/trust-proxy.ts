/**
 * express's `trust proxy` with the address checks remembered.
 *
 * With a list of addresses or subnets (TRUST_PROXY's default is
 * `loopback, linklocal, uniquelocal`), express asks for every `req.ip`,
 * `req.protocol` and `req.hostname` whether the peer is a trusted proxy, and
 * proxy-addr parses the address anew each time: several microseconds a
 * request on the hot path. For a list the answer depends on the address
 * alone, so it is remembered per address (a bounded map, emptied when full).
 * `true`, `false` and a hop count are left to express: they parse nothing.
 */
import type { Express } from 'express';

const MAX_REMEMBERED = 1024;

export function setTrustProxy(app: Express, value: boolean | number | string): void {
  app.set('trust proxy', value);
  if (typeof value !== 'string') return;
  const compiled = app.get('trust proxy fn') as (address: string, hop: number) => boolean;
  const known = new Map<string, boolean>();
  app.set('trust proxy', (address: string, hop: number): boolean => {
    let trusted = known.get(address);
    if (trusted === undefined) {
      trusted = compiled(address, hop);
      if (known.size >= MAX_REMEMBERED) known.clear();
      known.set(address, trusted);
    }
    return trusted;
  });
}
