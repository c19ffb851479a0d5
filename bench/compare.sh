#!/usr/bin/env bash
# Runs ../shared/bench/compare.sh (the gateway vs LiteLLM's proxy, same fake upstream on port 9100, wrk)
# against this project's gateway: prepares the database (bench/prepare.py, catalog row bench/fake ->
# http://127.0.0.1:9100/v1), starts the gateway as in production (`python -m gateway_project.serve`: uvicorn with
# its httptools protocol, one worker, uvloop + httptools, lifespan on) pinned to core 1 with the default
# middleware chain, runs the comparison and stops the gateway.
#   BENCH_DATABASE_URL / BENCH_REDIS_URL as for bench/run.sh; COMPARE=path/to/compare.sh to override.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
COMPARE=${COMPARE:-$root/../../shared/bench/compare.sh}
[ -x "$COMPARE" ] || COMPARE=/work/shared/bench/compare.sh
GATEWAY_PORT=${GATEWAY_PORT:-8401}
export UPSTREAM_PORT=9100 BENCH_API_FORMAT=${BENCH_API_FORMAT:-openai-responses}
export DATABASE_URL=${BENCH_DATABASE_URL:-sqlite:////tmp/gateway-compare.sqlite3}
export REDIS_URL=${BENCH_REDIS_URL:-}
export DJANGO_DEBUG=false DJANGO_SECRET_KEY=${DJANGO_SECRET_KEY:-bench-only-secret-key-0123456789abcdefghijklmnop}
export GATEWAY_BYOK_ENCRYPTION_KEYS=${GATEWAY_BYOK_ENCRYPTION_KEYS:-$("$root/.venv/bin/python" -c \
  'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')}
export GATEWAY_LOG_LEVEL=WARNING BENCH_KEY=sk-fake
case $DATABASE_URL in sqlite:////tmp/gateway-compare.sqlite3) rm -f /tmp/gateway-compare.sqlite3;; esac
KEY=$(.venv/bin/python bench/prepare.py | tail -1)
# Every policy on by default (guardrail with all detectors, workspace budget, key limit): BENCH_POLICIES=0 skips it.
if [ "${BENCH_POLICIES:-1}" = 1 ]; then "$root/.venv/bin/python" bench/policies.py "$KEY" >/dev/null; fi
taskset -c 1 .venv/bin/python -m gateway_project.serve gateway_project.asgi:application --host 127.0.0.1 \
  --port "$GATEWAY_PORT" --workers 1 --loop uvloop --http httptools --lifespan on --no-access-log --log-level warning \
  >/tmp/gateway-compare-gateway.log 2>&1 &
gateway=$!
# The shared script's cleanup stops LiteLLM's launcher subshell, not LiteLLM itself: stop that too.
trap 'kill $gateway 2>/dev/null || true; pkill -f "bench-litellm-venv/bin/litellm --config" 2>/dev/null || true' EXIT
for _ in $(seq 60); do curl -s -o /dev/null "http://127.0.0.1:$GATEWAY_PORT/api/v1/responses" && break; sleep 0.5; done
# LiteLLM must not see the gateway's DATABASE_URL / REDIS_URL (it would try to use them).
env -u DATABASE_URL -u REDIS_URL GATEWAY_URL=http://127.0.0.1:$GATEWAY_PORT/api/v1/responses GATEWAY_KEY=$KEY \
  GATEWAY_MODEL=bench/fake "$COMPARE"
