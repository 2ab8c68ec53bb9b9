/**
 * A TCP port free on 127.0.0.1 right now, for a server a script or test
 * spawns (its port must be known before it starts). The benchmarks (bench/)
 * import it from here too: they spawn servers the same way, and test support
 * never imports bench/.
 */
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
