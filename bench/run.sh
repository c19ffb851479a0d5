#!/usr/bin/env bash
# Load benchmark of the gateway against the bare fake upstream (wrk, loopback).
#
#   bench/run.sh                # from the project root; DUR=10 seconds per run by default
#
# Starts bench/fake_upstream.py on core 0, the gateway (python -m gateway_project.serve, WORKERS workers (1),
# uvloop + httptools) pinned to GATEWAY_CPUS (core 1) with the full default middleware chain (key auth, accounting, and whatever settings list), and wrk
# on core 0. Measures, JSON and streamed (20 chunks): p50 latency at 1 connection and requests/s at 16
# connections, for the bare upstream and through the gateway, and prints the added p50 latency. The gateway is
# measured through each wire format: /responses, /chat/completions and /messages (BENCH_WIRE=responses skips
# the other two), each compared with the added latency of /responses.
# Database and Redis: BENCH_DATABASE_URL (default a fresh SQLite file in /tmp) and BENCH_REDIS_URL (default
# none). The upstream format: BENCH_API_FORMAT (openai-responses | openai-chat | anthropic-messages).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
PY=${PY:-$root/.venv/bin/python}
DUR=${DUR:-10}
UPSTREAM_PORT=${UPSTREAM_PORT:-9200}
GATEWAY_PORT=${GATEWAY_PORT:-8400}
WORKERS=${WORKERS:-1}          # uvicorn --workers (CPU per request is summed over the workers)
GATEWAY_CPUS=${GATEWAY_CPUS:-1}  # taskset of the gateway (the upstream and wrk run on core 0)
export UPSTREAM_PORT BENCH_API_FORMAT=${BENCH_API_FORMAT:-openai-responses}
export DATABASE_URL=${BENCH_DATABASE_URL:-sqlite:////tmp/gateway-bench.sqlite3}
export REDIS_URL=${BENCH_REDIS_URL:-}
export DJANGO_DEBUG=false DJANGO_SECRET_KEY=${DJANGO_SECRET_KEY:-bench-only-secret-key-0123456789abcdefghijklmnop}
export GATEWAY_BYOK_ENCRYPTION_KEYS=${GATEWAY_BYOK_ENCRYPTION_KEYS:-$("$root/.venv/bin/python" -c \
  'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')}
export GATEWAY_LOG_LEVEL=WARNING BENCH_KEY=sk-bench-upstream
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk >/dev/null; }
case $DATABASE_URL in sqlite:////tmp/gateway-bench.sqlite3) rm -f /tmp/gateway-bench.sqlite3;; esac

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
taskset -c 0 "$PY" bench/fake_upstream.py "$UPSTREAM_PORT" >/tmp/gateway-bench-upstream.log 2>&1 & pids+=($!)
KEY=$("$PY" bench/prepare.py | tail -1)
# Every policy on by default (guardrail with all detectors, workspace budget, key limit): BENCH_POLICIES=0 skips it.
if [ "${BENCH_POLICIES:-1}" = 1 ]; then "$root/.venv/bin/python" bench/policies.py "$KEY" >/dev/null; fi
# The production command line (gateway_project.serve: uvicorn with the gateway's HTTP protocol, proxy headers off).
taskset -c "$GATEWAY_CPUS" "$PY" -m gateway_project.serve gateway_project.asgi:application --host 127.0.0.1 \
  --port "$GATEWAY_PORT" --workers "$WORKERS" --loop uvloop --http httptools --lifespan on --no-access-log \
  --log-level warning >/tmp/gateway-bench-gateway-$GATEWAY_PORT.log 2>&1 & pids+=($!)
gateway_pid=$!
for _ in $(seq 60); do curl -s -o /dev/null "http://127.0.0.1:$UPSTREAM_PORT/v1/models" && break; sleep 0.5; done
for _ in $(seq 60); do curl -s -o /dev/null "http://127.0.0.1:$GATEWAY_PORT/api/v1/responses" && break; sleep 0.5; done
check=$(curl -s -H "Authorization: Bearer $KEY" -d '{"model":"bench/fake","input":"Say hello"}' \
  "http://127.0.0.1:$GATEWAY_PORT/api/v1/responses")
case $check in *'"status":"completed"'*) ;; *) echo "gateway check failed: $check" >&2; exit 1;; esac

lua() { # $1 key, $2 model, $3 stream true/false, $4 wire format (responses | chat | messages)
  local f body; f=$(mktemp --suffix .lua)
  case ${4:-responses} in
    chat) body='{"model":"'$2'","messages":[{"role":"user","content":"Say hello"}],"stream":'$3'}';;
    messages) body='{"model":"'$2'","max_tokens":4096,"messages":[{"role":"user","content":"Say hello"}],"stream":'$3'}';;
    *) body='{"model":"'$2'","input":"Say hello","stream":'$3'}';;
  esac
  printf 'wrk.method="POST"\nwrk.headers["Content-Type"]="application/json"\nwrk.headers["Authorization"]="Bearer %s"\nwrk.body=[[%s]]\n' \
    "$1" "$body" >"$f"; echo "$f"; }
cpu_ticks() { # user + system time of the gateway process and its workers (clock ticks)
  local total=0 p; for p in $gateway_pid $(pgrep -P "$gateway_pid" || true); do
    total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done; echo $total; }
run() { # $1 url $2 lua $3 connections -> "rps p50_ms non2xx gateway_cpu_us_per_request"
  taskset -c 0 wrk -t1 -c"$3" -d2s -s "$2" "$1" >/dev/null 2>&1 || true
  local before out; before=$(cpu_ticks)
  out=$(taskset -c 0 wrk -t1 -c"$3" -d"${DUR}s" -s "$2" --latency "$1" 2>&1)
  echo "$out" | awk -v before="$before" -v after="$(cpu_ticks)" -v hz="$(getconf CLK_TCK)" '
    /requests in/ {n=$1} /Requests\/sec/ {rps=$2}
    /^ +50%/ {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; p50=v}
    /Non-2xx/ {bad=$NF}
    END {printf "%s %s %s %.0f\n", rps, p50, (bad==""?0:bad), (n ? (after - before) / hz * 1e6 / n : 0)}'; }

# "gw CPU us/req": the gateway process's CPU time (user + system, all threads) per request at c=1 and c=16;
# it does not depend on how busy the machine's other processes keep the cores, unlike the latencies.
printf '%-10s %-8s %12s %12s %8s %22s\n' target stream "c1 p50 ms" "c16 req/s" non2xx "gw CPU us/req c1/c16"
declare -A R
targets="upstream gateway"; [ "${BENCH_WIRE:-all}" = responses ] || targets="upstream gateway chat messages"
for stream in false true; do
  for t in $targets; do
    case $t in
      upstream) url=http://127.0.0.1:$UPSTREAM_PORT/v1/responses; f=$(lua x fake-model $stream);;
      gateway) url=http://127.0.0.1:$GATEWAY_PORT/api/v1/responses; f=$(lua "$KEY" bench/fake $stream);;
      chat) url=http://127.0.0.1:$GATEWAY_PORT/api/v1/chat/completions; f=$(lua "$KEY" bench/fake $stream chat);;
      messages) url=http://127.0.0.1:$GATEWAY_PORT/api/v1/messages; f=$(lua "$KEY" bench/fake $stream messages);;
    esac
    read -r _ p50 bad1 cpu1 < <(run "$url" "$f" 1)
    read -r rps _ bad16 cpu16 < <(run "$url" "$f" 16)
    R[$t-$stream-p50]=$p50; R[$t-$stream-rps]=$rps
    cpu="-"; [ $t != upstream ] && cpu="$cpu1 / $cpu16"
    printf '%-10s %-8s %12s %12s %8s %22s\n' $t $stream "$p50" "$rps" "$((bad1 + bad16))" "$cpu"
  done
done
for stream in false true; do
  awk -v g="${R[gateway-$stream-p50]}" -v u="${R[upstream-$stream-p50]}" -v s=$stream \
    'BEGIN {printf "stream=%-5s added p50 at c=1: %.3f ms\n", s, g - u}'
  for t in chat messages; do
    [ -n "${R[$t-$stream-p50]:-}" ] || continue
    awk -v w="${R[$t-$stream-p50]}" -v g="${R[gateway-$stream-p50]}" -v u="${R[upstream-$stream-p50]}" -v s=$stream \
      -v t=$t -v wr="${R[$t-$stream-rps]}" -v gr="${R[gateway-$stream-rps]}" \
      'BEGIN {printf "stream=%-5s %-8s added p50 at c=1: %.3f ms (%+.0f%% of /responses), c16 req/s %+.0f%%\n",
              s, t, w - u, (g - u > 0 ? ((w - u) / (g - u) - 1) * 100 : 0), (gr > 0 ? (wr / gr - 1) * 100 : 0)}'
  done
done
rows=$(DATABASE_URL=$DATABASE_URL "$PY" -c "
import os, django; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'gateway_project.settings'); django.setup()
from inference.models import Generation; print(Generation.objects.count())")
echo "Generation rows written: $rows"
