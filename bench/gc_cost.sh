#!/usr/bin/env bash
# What Python's cyclic garbage collector costs the gateway per request, and what it finds: each checkout's
# worker runs under bench/gc_probe.py (gc.callbacks around every collection) on core 1, the fake upstream and
# wrk on core 0, every policy on (bench/policies.py); after a 3 s warm-up, DUR seconds at CONN connections.
# Printed per checkout: requests/s, p50 / p99, the worker's CPU per request, and per generation the
# collections, their CPU per request, the longest one (every request in flight waits for it) and the objects
# they freed per request (garbage that reference counting could not free: reference cycles). With GARBAGE=1,
# also the types of the objects left in cycles by one second of requests at one connection, each with a cycle.
#
#   bench/gc_cost.sh                              # this checkout, JSON, 16 connections, 8 s
#   STREAM=true GARBAGE=1 bench/gc_cost.sh /work/wt/base .
#
# Database and Redis: BENCH_DATABASE_URL (default a fresh SQLite file) and BENCH_REDIS_URL (default none).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
DUR=${DUR:-8}; CONN=${CONN:-16}; STREAM=${STREAM:-false}; PORT=${PORT:-8710}; UPSTREAM_PORT=${UPSTREAM_PORT:-9710}
export UPSTREAM_PORT BENCH_API_FORMAT=openai-responses BENCH_KEY=sk-bench-upstream
export DATABASE_URL=${BENCH_DATABASE_URL:-sqlite:////tmp/gateway-gc-cost.sqlite3}
export REDIS_URL=${BENCH_REDIS_URL:-}
export DJANGO_DEBUG=false DJANGO_SECRET_KEY=bench-only-secret-key-0123456789abcdefghijklmnop GATEWAY_LOG_LEVEL=WARNING
export GATEWAY_BYOK_ENCRYPTION_KEYS=${GATEWAY_BYOK_ENCRYPTION_KEYS:-$("$root/.venv/bin/python" -c \
  'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')}
case $DATABASE_URL in sqlite:////tmp/gateway-gc-cost.sqlite3) rm -f /tmp/gateway-gc-cost.sqlite3;; esac
PY=$root/.venv/bin/python
export GC_PROBE_OUT=/tmp/gateway-gc-probe.json
pids=(); cleanup() { for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done; }; trap cleanup EXIT
cd "$root"
taskset -c 0 "$PY" bench/fake_upstream.py "$UPSTREAM_PORT" >/tmp/gateway-gc-cost-upstream.log 2>&1 & pids+=($!)
key=$("$PY" bench/prepare.py | tail -1); "$PY" bench/policies.py "$key" >/dev/null
lua=$(mktemp --suffix .lua)
printf 'wrk.method="POST"\nwrk.headers["Content-Type"]="application/json"\nwrk.headers["Authorization"]="Bearer %s"\nwrk.body=[[{"model":"bench/fake","input":"Say hello","stream":%s}]]\n' "$key" "$STREAM" >"$lua"
url=http://127.0.0.1:$PORT/api/v1/responses
for checkout in "${@:-.}"; do
  dir=$(cd "$checkout" && pwd)
  (cd "$dir" && PYTHONPATH=$dir exec taskset -c 1 .venv/bin/python "$root/bench/gc_probe.py" gateway_project.asgi:application \
    --host 127.0.0.1 --port "$PORT" --workers 1 --loop uvloop --http httptools --lifespan on --no-access-log \
    --log-level warning >/tmp/gateway-gc-cost-gateway.log 2>&1) & gw=$!
  for _ in $(seq 60); do curl -s -o /dev/null "$url" && break; sleep 0.5; done
  worker=$(pgrep -f -n "gc_probe.py gateway_project.asgi" || echo "$gw")
  taskset -c 0 wrk -t1 -c"$CONN" -d3s -s "$lua" "$url" >/dev/null
  kill -USR1 "$worker"; sleep 0.3; cp "$GC_PROBE_OUT" "$GC_PROBE_OUT.before"
  taskset -c 0 wrk -t1 -c"$CONN" -d"${DUR}s" -s "$lua" --latency "$url" >/tmp/gateway-gc-cost-wrk.txt
  kill -USR1 "$worker"; sleep 0.3
  echo "== $checkout (stream=$STREAM, $CONN connections, $DUR s)"
  "$PY" - <<'PY'
import json, os
out = os.environ["GC_PROBE_OUT"]
before, after = json.load(open(out + ".before")), json.load(open(out))
wrk = open("/tmp/gateway-gc-cost-wrk.txt").read().splitlines()
n = int(next(line for line in wrk if "requests in" in line).split()[0])
rps = next(line for line in wrk if line.startswith("Requests/sec")).split()[1]
p50 = next(line for line in wrk if line.strip().startswith("50%")).split()[1]
p99 = next(line for line in wrk if line.strip().startswith("99%")).split()[1]
cpu = (after["process_cpu_s"] - before["process_cpu_s"]) * 1e6 / n
print(f"{n} requests, {rps} requests/s, p50 {p50}, p99 {p99}, worker CPU {cpu:.0f} us per request")
for g in "012":
    a, b = after["generations"][g], before["generations"][g]
    count = a["collections"] - b["collections"]
    spent = (a["cpu_s"] - b["cpu_s"]) * 1e6 / n
    freed = (a["freed"] - b["freed"]) / n
    print(f"  generation {g}: {count} collections, {spent:.1f} us per request, longest {a['longest_s'] * 1e3:.1f} ms, "
          f"{freed:.1f} objects freed per request")
print(f"  tracked objects {after['tracked']}, frozen {after['frozen']}, thresholds {after['thresholds']}")
PY
  if [ "${GARBAGE:-0}" = 1 ]; then
    kill -USR2 "$worker"; sleep 0.3
    taskset -c 0 wrk -t1 -c1 -d1s -s "$lua" "$url" | awk '/requests in/ {print "  garbage of " $1 " requests at one connection:"}'
    kill -USR2 "$worker"; sleep 1; sed 's/^/  /' "$GC_PROBE_OUT.garbage"
  fi
  kill -INT "$gw" 2>/dev/null || true; wait "$gw" 2>/dev/null || true
done
