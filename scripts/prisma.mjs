#!/usr/bin/env node
// Runs the Prisma CLI without its native schema engine.
//
// `prisma generate` needs no native engine (the client compiles queries with
// WebAssembly), but the CLI tries to download one first and fails offline.
// Pointing PRISMA_SCHEMA_ENGINE_BINARY at a stub skips that download. The stub
// refuses to run, with a message saying how this project migrates.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stub = join(root, 'node_modules', '.cache', 'schema-engine-stub.sh');
if (!existsSync(stub)) {
  mkdirSync(dirname(stub), { recursive: true });
  writeFileSync(
    stub,
    '#!/bin/sh\necho "The native schema engine is not used: this project applies migrations with \\`npm run db:migrate\\`." >&2\nexit 1\n',
  );
  chmodSync(stub, 0o755);
}
const cli = join(root, 'node_modules', 'prisma', 'build', 'index.js');
const result = spawnSync(process.execPath, [cli, ...process.argv.slice(2)], {
  stdio: 'inherit',
  env: { PRISMA_HIDE_UPDATE_MESSAGE: '1', ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: stub },
});
process.exit(result.status ?? 1);
