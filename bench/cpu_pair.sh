#!/usr/bin/env bash
# CPU per request of two checkouts of the gateway, alternated in one session (a paired before/after that the
# machine's other load distorts little): the ASGI application driven in-process (bench/inprocess.py, no
# sockets between client and gateway; the fake upstream is a separate process) with every policy on.
#
#   bench/cpu_pair.sh /path/to/before /path/to/after        # ROUNDS=3 N=1000 C="1 16" KINDS="json stream"
#
# Prints, per round, checkout, kind and concurrency: requests/s and the process's CPU time per request (user +
# system, every thread: the hold, settlement and accounting threads included; the in-process client adds a
# few µs). Database: BENCH_DATABASE_URL (default a fresh SQLite file) and BENCH_REDIS_URL, prepared once by the
# second checkout's bench/prepare.py (both checkouts must be able to use that schema). Pinned to core 1, the
# upstream to core 0.
set -euo pipefail
before=$(cd "$1" && pwd); after=$(cd "$2" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$root/.venv/bin/python}
ROUNDS=${ROUNDS:-3}; N=${N:-1000}; C=${C:-"1 16"}; KINDS=${KINDS:-"json stream"}
UPSTREAM_PORT=${UPSTREAM_PORT:-9210}
export UPSTREAM_PORT BENCH_API_FORMAT=openai-responses BENCH_KEY=sk-bench-upstream
export DATABASE_URL=${BENCH_DATABASE_URL:-sqlite:////tmp/gateway-cpu-pair.sqlite3}
export REDIS_URL=${BENCH_REDIS_URL:-}
export DJANGO_DEBUG=false DJANGO_SECRET_KEY=bench-only-secret-key-0123456789abcdefghijklmnop
export GATEWAY_LOG_LEVEL=WARNING GATEWAY_BYOK_ENCRYPTION_KEYS=${GATEWAY_BYOK_ENCRYPTION_KEYS:-$("$PY" -c \
  'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')}
case $DATABASE_URL in sqlite:////tmp/gateway-cpu-pair.sqlite3) rm -f /tmp/gateway-cpu-pair.sqlite3;; esac
taskset -c 0 "$PY" "$root/bench/fake_upstream.py" "$UPSTREAM_PORT" >/tmp/gateway-cpu-pair-upstream.log 2>&1 &
upstream=$!
trap 'kill $upstream 2>/dev/null || true' EXIT
for _ in $(seq 60); do curl -s -o /dev/null "http://127.0.0.1:$UPSTREAM_PORT/v1/models" && break; sleep 0.5; done
KEY=$(cd "$after" && "$PY" bench/prepare.py | tail -1)
(cd "$after" && "$PY" bench/policies.py "$KEY" >/dev/null)
export KEY MODEL=bench/fake
for round in $(seq "$ROUNDS"); do
  for tree in "$before" "$after"; do
    for kind in $KINDS; do
      for c in $C; do
        stream=false; [ "$kind" = stream ] && stream=true
        line=$(cd "$tree" && STREAM=$stream N=$N C=$c taskset -c 1 "$PY" bench/inprocess.py 2>&1 | tail -1)
        printf 'round %s  %-28s %-6s c=%-3s %s\n' "$round" "$(basename "$tree")" "$kind" "$c" "$line"
      done
    done
  done
done
