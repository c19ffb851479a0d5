#!/usr/bin/env bash
# Guardrail overhead through the whole gateway (wrk, loopback): the same typical request (instructions and
# three messages, 516 characters) against a fresh gateway without a guardrail, then against a fresh gateway
# whose key has a guardrail with all eight built-in filters and five regexes (on redact). Each case gets its
# own database and processes, because the gateway slows down as one run's Generation rows pile up (two
# runs in a row without a guardrail differ as much as that). The fake upstream (tests/fakes/fake_upstream.py)
# runs on core 0 with wrk, the gateway (uvicorn, one worker) on core 1.
#
#   bench/guardrails_overhead.sh           # from the project root; DUR=5 seconds per run by default
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
PY=${PY:-$root/.venv/bin/python}
DUR=${DUR:-5}
PORT=${GATEWAY_PORT:-8411}
export DJANGO_DEBUG=false DJANGO_SECRET_KEY=bench-only-secret-key-0123456789abcdefghijklmnop
export GATEWAY_LOG_LEVEL=WARNING BENCH_KEY=sk-bench-upstream REDIS_URL=${BENCH_REDIS_URL:-}
export GATEWAY_BYOK_ENCRYPTION_KEYS=${GATEWAY_BYOK_ENCRYPTION_KEYS:-$("$PY" -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done; pids=(); }
trap cleanup EXIT

measure() { # $1 = none | guardrail  -> "c1_p50_ms c16_rps non2xx" (runs in a subshell: its own trap)
  trap cleanup EXIT
  export DATABASE_URL=sqlite:////tmp/guardrails-bench-$1.sqlite3
  rm -f /tmp/guardrails-bench-"$1".sqlite3*
  local upstream_log; upstream_log=$(mktemp)
  taskset -c 0 "$PY" -c "
import time; from tests.fakes.fake_upstream import FakeUpstream
f = FakeUpstream().start(); print(f.base_url, flush=True)
while True:
    time.sleep(1); f.requests.clear()
" >"$upstream_log" 2>&1 & pids+=($!)
  for _ in $(seq 50); do [ -s "$upstream_log" ] && break; sleep 0.1; done
  local key; key=$("$PY" bench/guardrails_prepare.py setup "$(head -1 "$upstream_log")" | tail -1)
  [ "$1" = none ] || "$PY" bench/guardrails_prepare.py assign "$key" >/dev/null
  taskset -c 1 "$root/.venv/bin/uvicorn" gateway_project.asgi:application --host 127.0.0.1 --port "$PORT" \
    --workers 1 --loop uvloop --http httptools --lifespan off --no-access-log --log-level warning \
    >/tmp/guardrails-bench-gateway.log 2>&1 & pids+=($!)
  for _ in $(seq 60); do curl -s -o /dev/null "http://127.0.0.1:$PORT/api/v1/responses" && break; sleep 0.5; done
  kill -0 "${pids[-1]}" 2>/dev/null || { echo "gateway did not start (port $PORT taken?)" >&2; exit 1; }
  local body lua; body=$("$PY" -c "
import json, os, sys; sys.path.insert(0, '.'); os.environ['DJANGO_SETTINGS_MODULE'] = 'gateway_project.settings'
import django; django.setup()
from guardrails.management.commands.bench_guardrails import typical_body
b = typical_body(); b['model'] = 'bench/fake'; print(json.dumps(b))")
  lua=$(mktemp --suffix .lua)
  printf 'wrk.method="POST"\nwrk.headers["Content-Type"]="application/json"\nwrk.headers["Authorization"]="Bearer %s"\nwrk.body=[[%s]]\n' \
    "$key" "$body" >"$lua"
  local check; check=$(curl -s -H "Authorization: Bearer $key" -d "$body" "http://127.0.0.1:$PORT/api/v1/responses")
  case $check in *'"status":"completed"'*) ;; *) echo "gateway check failed: $check" >&2; exit 1;; esac
  local url=http://127.0.0.1:$PORT/api/v1/responses p50 rps bad1 bad16
  wrk_run() {
    taskset -c 0 wrk -t1 -c"$1" -d2s -s "$lua" "$url" >/dev/null 2>&1 || true
    taskset -c 0 wrk -t1 -c"$1" -d"${DUR}s" -s "$lua" --latency "$url" 2>&1 | awk '
      /Requests\/sec/ {rps=$2} /^ +50%/ {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; p50=v}
      /Non-2xx/ {bad=$NF} END {printf "%s %s %s\n", rps, p50, (bad==""?0:bad)}'; }
  read -r _ p50 bad1 < <(wrk_run 1)
  read -r rps _ bad16 < <(wrk_run 16)
  cleanup
  echo "$p50 $rps $((bad1 + bad16))"
}

printf '%-28s %12s %12s %8s\n' case "c1 p50 ms" "c16 req/s" non2xx
read -r p50a rpsa bada < <(measure none)
printf '%-28s %12s %12s %8s\n' "no guardrail" "$p50a" "$rpsa" "$bada"
read -r p50b rpsb badb < <(measure guardrail)
printf '%-28s %12s %12s %8s\n' "8 built-ins + 5 regexes" "$p50b" "$rpsb" "$badb"
awk -v a="$p50a" -v b="$p50b" -v ra="$rpsa" -v rb="$rpsb" \
  'BEGIN {printf "guardrail overhead: %+.3f ms at p50 (c=1), throughput %.0f%% of no guardrail (c=16)\n", b-a, 100*rb/ra}'
