#!/usr/bin/env bash
# CPU time of the service's main thread per negotiate read-resource call: a
# steadier figure than req/s on a shared machine (it does not move with what
# else runs, only with what the service does per request).
#
#   bench/cpu-per-request.sh [CHECKOUT] [token|none]
#
# CHECKOUT (default: this one) must have a build (`npm run build`); `none`
# sends no Authorization header (for checkouts from before authentication).
# Needs psql and Postgres at BENCH_DATABASE_URL's server (default
# postgresql://root@127.0.0.1:5432/postgres); uses a scratch database.
set -euo pipefail
CHECKOUT=$(cd "${1:-$(dirname "$0")/..}" && pwd)
AUTH=${2:-token}
N=${N:-20000}
SERVER=${BENCH_DATABASE_URL:-postgresql://root@127.0.0.1:5432/postgres}
DB=orchestrator_cpu_bench
ADMIN=bench-admin-token-0123456789abcdef
PORT=${PORT:-39125}
psql "$SERVER" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -qc "CREATE DATABASE $DB" >/dev/null
cd "$CHECKOUT"
DATABASE_URL="${SERVER%/*}/$DB" PORT=$PORT HOST=127.0.0.1 LOG_LEVEL=warn NODE_ENV=production \
  ADMIN_API_KEY=$ADMIN RATE_LIMIT_PER_MINUTE=100000000 node dist/src/server.js >/dev/null 2>&1 &
PID=$!
trap 'kill -INT $PID 2>/dev/null; wait $PID 2>/dev/null; psql "$SERVER" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null' EXIT
for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.1; done
URL=http://127.0.0.1:$PORT/conversations/bench-conv/negotiate
HEADER="x-bench: 1"
if [ "$AUTH" = token ]; then
  TOKEN=$(curl -sf -XPOST -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' \
    -d '{"role":"user","subject":"bench-user"}' "http://127.0.0.1:$PORT/keys" | node -pe 'JSON.parse(require("fs").readFileSync(0)).token')
  HEADER="authorization: Bearer $TOKEN"
fi
post() { curl -sf -XPOST -H "$HEADER" -H 'content-type: application/json' -d "$1" "$URL" >/dev/null; }
post '{"action":"upgrade:data-tool:level-2"}'
post '{"action":"create-resource","args":{"name":"bench-doc","data":{"n":0}}}'
BODY='{"action":"read-resource","args":{"name":"bench-doc"}}'
load() { npx autocannon -a "$1" -c 32 -m POST -H "$HEADER" -H 'content-type: application/json' -b "$BODY" "$URL" 2>&1; }
load 5000 >/dev/null # warm-up
ticks() { awk '{print $14+$15}' "/proc/$PID/task/$PID/stat"; }
HZ=$(getconf CLK_TCK)
before=$(ticks)
summary=$(load "$N" | grep -E "requests in")
after=$(ticks)
echo "$summary"
echo "service main thread: $(( (after - before) * 1000000 / HZ / N )) µs CPU per read-resource call ($N calls, 32 connections)"
