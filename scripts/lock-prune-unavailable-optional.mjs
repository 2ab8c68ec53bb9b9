#!/usr/bin/env node
// The npm registry reachable from this machine kind lacks some platform
// builds that packages list as optional (e.g. @unrs/resolver-binding-android-*,
// pulled in by jest). `npm install` skips them silently and writes a lockfile
// without them, which `npm ci` then rejects as out of sync. This removes, from
// package-lock.json, optional dependencies that have no entry in it. Run it
// after `npm install` changes the lockfile.
import { readFileSync, writeFileSync } from 'node:fs';

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
const present = new Set(Object.keys(lock.packages).map((p) => p.replace(/^.*node_modules\//, '')));
let removed = 0;
for (const entry of Object.values(lock.packages)) {
  if (!entry.optionalDependencies) continue;
  for (const name of Object.keys(entry.optionalDependencies)) {
    if (!present.has(name)) {
      delete entry.optionalDependencies[name];
      removed++;
    }
  }
  if (Object.keys(entry.optionalDependencies).length === 0) delete entry.optionalDependencies;
}
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`Removed ${removed} unavailable optional dependencies from package-lock.json`);
