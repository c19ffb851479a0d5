#!/usr/bin/env bash
# What the rate limits cost the data plane: CPU per request with rate limits on and off (bench/policies.py,
# BENCH_RATE_LIMITS=1 / 0), alternated in one session, every other policy on, the ASGI application driven
# in-process (bench/inprocess.py; the fake upstream a separate process). At c=16 the worker is CPU-bound, so the
# CPU per request is the inverse of its requests/s; it is much steadier than wrk's requests/s on a shared machine.
#
#   bench/ratelimit_pair.sh          # ROUNDS=4 N=2000 C=16 KINDS="json stream"; database and Redis as bench/cpu_pair.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
PY=${PY:-$root/.venv/bin/python}
ROUNDS=${ROUNDS:-4}; N=${N:-2000}; C=${C:-16}; KINDS=${KINDS:-"json stream"}
UPSTREAM_PORT=${UPSTREAM_PORT:-9211}
export UPSTREAM_PORT BENCH_API_FORMAT=openai-responses BENCH_KEY=sk-bench-upstream
export DATABASE_URL=${BENCH_DATABASE_URL:-sqlite:////tmp/gateway-ratelimit-pair.sqlite3}
export REDIS_URL=${BENCH_REDIS_URL:-}
export DJANGO_DEBUG=false DJANGO_SECRET_KEY=bench-only-secret-key-0123456789abcdefghijklmnop
export GATEWAY_LOG_LEVEL=WARNING GATEWAY_BYOK_ENCRYPTION_KEYS=${GATEWAY_BYOK_ENCRYPTION_KEYS:-$("$PY" -c \
  'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')}
case $DATABASE_URL in sqlite:////tmp/gateway-ratelimit-pair.sqlite3) rm -f /tmp/gateway-ratelimit-pair.sqlite3;; esac
taskset -c 0 "$PY" bench/fake_upstream.py "$UPSTREAM_PORT" >/tmp/gateway-ratelimit-pair-upstream.log 2>&1 &
upstream=$!
trap 'kill $upstream 2>/dev/null || true' EXIT
for _ in $(seq 60); do curl -s -o /dev/null "http://127.0.0.1:$UPSTREAM_PORT/v1/models" && break; sleep 0.5; done
KEY=$("$PY" bench/prepare.py | tail -1)
export KEY
for round in $(seq "$ROUNDS"); do
  for limits in 1 0; do
    BENCH_RATE_LIMITS=$limits "$PY" bench/policies.py "$KEY" >/dev/null
    for kind in $KINDS; do
      stream=false; [ "$kind" = stream ] && stream=true
      printf 'round %s  rate limits %-3s %-6s c=%s  ' "$round" "$([ $limits = 1 ] && echo on || echo off)" "$kind" "$C"
      N=$N C=$C STREAM=$stream taskset -c 1 "$PY" bench/inprocess.py | tail -1
    done
  done
done
