#!/usr/bin/env bash
# CPU per call of the service and of the floor, by process (service, floor,
# Postgres, client), for read-resource and update-resource, one after the other:
#
#   bench/cpu-split.sh [CHECKOUT]    (CHECKOUT built: npm run build; default this one)
#
# Postgres is counted over its processes present at both readings (backends
# that come and go make that figure rough, even negative); the service and
# floor figures are their processes' own.
set -euo pipefail
CHECKOUT=$(cd "${1:-$(dirname "$0")/..}" && pwd)
HERE=$(cd "$(dirname "$0")/.." && pwd)
N=${N:-20000}
C=${C:-32}
SERVER=${BENCH_DATABASE_URL:-postgresql://root@127.0.0.1:5432/postgres}
DB=orchestrator_cpu_split
ADMIN=bench-admin-token-0123456789abcdef
SP=39131; FP=39132
psql "$SERVER" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -qc "CREATE DATABASE $DB" >/dev/null
cd "$CHECKOUT"
DATABASE_URL="${SERVER%/*}/$DB" PORT=$SP HOST=127.0.0.1 LOG_LEVEL=warn NODE_ENV=production \
  ADMIN_API_KEY=$ADMIN RATE_LIMIT_PER_MINUTE=100000000 ${EXTRA_ENV:-} node ${NODE_FLAGS:-} dist/src/server.js >/dev/null 2>&1 &
SPID=$!
for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$SP/readyz" >/dev/null && break; sleep 0.1; done
DATABASE_URL="${SERVER%/*}/$DB" PORT=$FP node -r $HERE/node_modules/tsx/dist/cjs/index.cjs $HERE/bench/floor-server.ts >/dev/null 2>&1 &
FPID=$!
trap 'kill $SPID $FPID 2>/dev/null; wait 2>/dev/null; psql "$SERVER" -qc "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null' EXIT
sleep 2
URL=http://127.0.0.1:$SP/conversations/bench-conv/negotiate
TOKEN=$(curl -sf -XPOST -H "authorization: Bearer $ADMIN" -H 'content-type: application/json' \
    -d '{"role":"user","subject":"bench-user"}' "http://127.0.0.1:$SP/keys" | node -pe 'JSON.parse(require("fs").readFileSync(0)).token')
H="authorization: Bearer $TOKEN"
post() { curl -sf -XPOST -H "$H" -H 'content-type: application/json' -d "$1" "$URL" >/dev/null; }
post '{"action":"upgrade:data-tool:level-2"}'
post '{"action":"create-resource","args":{"name":"bench-doc","data":{"n":0,"items":[1,2,3]}}}'
AC=$HERE/node_modules/.bin/autocannon
ticks_pid() { awk '{s+=$14+$15} END{print s+0}' $(for p in "$@"; do echo /proc/$p/stat; done) 2>/dev/null; }
pg_ticks() { local s=0; for p in $(pgrep -x postgres); do t=$(awk '{print $14+$15}' /proc/$p/stat 2>/dev/null || echo 0); s=$((s+t)); done; echo $s; }
HZ=$(getconf CLK_TCK)
run() { # name url body headers...
  local name=$1 url=$2 body=$3; shift 3
  $AC -a 3000 -c $C -m POST "$@" -H 'content-type: application/json' -b "$body" "$url" >/dev/null 2>&1
  local s0=$(ticks_pid $SPID) f0=$(ticks_pid $FPID) p0=$(pg_ticks) t0=$(date +%s%N)
  local a0=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
  local out; out=$($AC -a $N -c $C -m POST "$@" -H 'content-type: application/json' -b "$body" "$url" 2>&1 | grep -E 'requests in')
  local s1=$(ticks_pid $SPID) f1=$(ticks_pid $FPID) p1=$(pg_ticks) t1=$(date +%s%N)
  local a1=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
  local el=$(( (t1-t0)/1000000 ))
  echo "$name: $(( N*1000/el )) req/s | µs/req: service $(( (s1-s0)*1000000/HZ/N )) floor $(( (f1-f0)*1000000/HZ/N )) postgres $(( (p1-p0)*1000000/HZ/N )) client $(( (a1-a0)*1000000/HZ/N ))"
}
run "floor read " "http://127.0.0.1:$FP/read/bench-conv/bench-doc" '{}'
run "svc read   " "$URL" '{"action":"read-resource","args":{"name":"bench-doc"}}' -H "$H"
run "floor upd  " "http://127.0.0.1:$FP/update/bench-conv/bench-doc" '{"data":{"n":1,"items":[1,2,3]}}'
run "svc upd    " "$URL" '{"action":"update-resource","args":{"name":"bench-doc","data":{"n":1,"items":[1,2,3]}}}' -H "$H"
