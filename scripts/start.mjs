#!/usr/bin/env node
// `npm start`: builds only when the build is missing or older than what it is
// built from, then runs the service, forwarding signals to it so that stopping
// npm (Ctrl-C, SIGTERM) stops the service gracefully, and exits with its code.
//
// A full build takes most of a minute here; a restart should take seconds.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'dist', 'src', 'server.js');
// Written only after a successful build: a failed one leaves no stamp, so the next start retries.
const stamp = join(root, 'dist', '.build-stamp');

// console/: the console's sources, built into dist/console by the same build.
const INPUT_DIRS = ['src', 'tools', 'console'];
const INPUT_FILES = [
  'prisma/schema.prisma',
  'tsoa.json',
  'tsoa-routes.cjs',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
];
// Written by the build itself (prisma generate, tsoa routes), so not an input of it.
const GENERATED = join(root, 'src', 'generated');

/** The newest modification time among the build's inputs, with the file that has it. */
function newestInput() {
  let newest = { mtimeMs: 0, path: '' };
  const consider = (path) => {
    const { mtimeMs } = statSync(path);
    if (mtimeMs > newest.mtimeMs) newest = { mtimeMs, path };
  };
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (path === GENERATED) continue;
      if (e.isDirectory()) walk(path);
      else if (e.isFile()) consider(path);
    }
  };
  for (const d of INPUT_DIRS) if (existsSync(join(root, d))) walk(join(root, d));
  for (const f of INPUT_FILES) if (existsSync(join(root, f))) consider(join(root, f));
  return newest;
}

function staleReason() {
  if (!existsSync(entry) || !existsSync(stamp)) return 'no complete build in dist/';
  if (!existsSync(join(root, 'dist', 'console', 'index.html'))) return 'no console build in dist/console';
  const built = statSync(stamp).mtimeMs;
  const newest = newestInput();
  return newest.mtimeMs > built ? `${newest.path.slice(root.length + 1)} changed since the last build` : undefined;
}

/** Runs a child with our stdio; signals sent to this process go to it. Resolves with how it ended. */
function run(file, args) {
  const child = spawn(file, args, { cwd: root, stdio: 'inherit' });
  const forward = (signal) => child.kill(signal);
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const signal of signals) process.on(signal, forward);
  return new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      for (const s of signals) process.off(s, forward);
      resolve({ code, signal });
    }),
  );
}

/** Ends this process the way the child ended, so whoever started npm sees the same outcome. */
function exitLike({ code, signal }) {
  if (signal) process.kill(process.pid, signal);
  else process.exit(code ?? 1);
}

// `npm run build` ends with this, so a build made by hand counts as up to date too.
if (process.argv.includes('--stamp-build')) {
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
  process.exit(0);
}

// package.json's "engines": ^22.12 || >=24. Node 20 still runs the service (CI checks it), but it
// is past its end of life (April 2026) and some dev dependencies already need 22.
const [major] = process.versions.node.split('.').map(Number);
if (major < 22) {
  process.stderr.write(
    `Warning: Node ${process.versions.node} is past its end of life and not supported; use Node 24 LTS (or 22.12+).\n`,
  );
}

const reason = staleReason();
if (reason) {
  process.stderr.write(`Building (${reason})...\n`);
  const npm = process.env.npm_execpath;
  // Under npm, build with the same npm; run directly, use the one on PATH.
  const built = await (npm ? run(process.execPath, [npm, 'run', 'build']) : run('npm', ['run', 'build']));
  // The build writes the stamp as its last step (--stamp-build), only when it succeeded.
  if (built.code !== 0) exitLike(built);
} else {
  process.stderr.write('Build is up to date; starting.\n');
}
// The service's own SIGTERM/SIGINT handler decides how to stop; this process waits for it.
exitLike(await run(process.execPath, [...process.execArgv, entry, ...process.argv.slice(2)]));
