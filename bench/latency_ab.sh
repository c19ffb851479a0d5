#!/usr/bin/env bash
# Added latency at one connection (wrk p50, or requests/s at CONN connections with METRIC=rps; in brackets the
# gateway process's CPU time per request, user + system, every thread, during that measure) of several
# gateway variants side by side: one worker per checkout, all up at once on core 1 (the upstream and wrk on
# core 0), measured in turn, round after round, so that a drift of the shared machine hits every variant alike;
# the order is rotated by one each round, so that no variant is always the one measured right after the upstream.
# A variant is CHECKOUT:POLICIES[@WIRE], POLICIES being "none" or letters of bench/policies.py's BENCH_POLICY_SET
# (g guardrail, b budget and key limit, r rate limits); each policy set gets its own key in one database. WIRE
# is the ingress the requests go through: responses (the default), chat (/chat/completions) or messages.
#
#   bench/latency_ab.sh . :gbr :gb :none                  # this checkout, three policy sets
#   bench/latency_ab.sh /work/wt/base:gbr .:gbr           # before / after, every policy on
#   bench/latency_ab.sh .:gbr .:gbr@chat .:gbr@messages   # the three wire formats, one worker
#   ROUNDS=5 DUR=5 STREAM=true CONN=16 METRIC=rps bench/latency_ab.sh ...
#
# Database and Redis: BENCH_DATABASE_URL (default a fresh SQLite file) and BENCH_REDIS_URL (default none). The
# checkouts need their .venv (a symlink to this one's will do) and must share the database's migrations.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-5}; DUR=${DUR:-5}; STREAM=${STREAM:-false}; CONN=${CONN:-1}; METRIC=${METRIC:-p50}
UPSTREAM_PORT=${UPSTREAM_PORT:-9500}; FIRST_PORT=${FIRST_PORT:-8601}
export UPSTREAM_PORT BENCH_API_FORMAT=openai-responses BENCH_KEY=sk-bench-upstream
export DATABASE_URL=${BENCH_DATABASE_URL:-sqlite:////tmp/gateway-latency-ab.sqlite3}
export REDIS_URL=${BENCH_REDIS_URL:-}
export DJANGO_DEBUG=false DJANGO_SECRET_KEY=bench-only-secret-key-0123456789abcdefghijklmnop GATEWAY_LOG_LEVEL=WARNING
export GATEWAY_BYOK_ENCRYPTION_KEYS=${GATEWAY_BYOK_ENCRYPTION_KEYS:-$("$root/.venv/bin/python" -c \
  'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')}
case $DATABASE_URL in sqlite:////tmp/gateway-latency-ab.sqlite3) rm -f /tmp/gateway-latency-ab.sqlite3;; esac
PY=$root/.venv/bin/python
pids=(); cleanup() { for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done; }; trap cleanup EXIT
cd "$root"
taskset -c 0 "$PY" bench/fake_upstream.py "$UPSTREAM_PORT" >/tmp/gateway-latency-ab-upstream.log 2>&1 & pids+=($!)
declare -A PORT KEYS GPID; port=$FIRST_PORT
for variant in "$@"; do
  dir=${variant%%:*}; dir=$(cd "${dir:-.}" && pwd); set_=${variant##*:}; set_=${set_%@*}
  if [ -z "${PORT[$dir]:-}" ]; then
    (cd "$dir" && exec taskset -c 1 .venv/bin/python -m gateway_project.serve gateway_project.asgi:application \
      --host 127.0.0.1 --port "$port" --workers 1 --loop uvloop --http httptools --lifespan on --no-access-log \
      --log-level warning >"/tmp/gateway-latency-ab-$port.log" 2>&1) & pids+=($!)
    PORT[$dir]=$port; GPID[$dir]=$!; port=$((port + 1))
  fi
  if [ -z "${KEYS[$set_]:-}" ]; then
    key=$("$PY" bench/prepare.py | tail -1)
    [ "$set_" = none ] || BENCH_POLICY_SET=$set_ "$PY" bench/policies.py "$key" >/dev/null
    KEYS[$set_]=$key
  fi
done
for p in "${PORT[@]}"; do for _ in $(seq 60); do curl -s -o /dev/null "http://127.0.0.1:$p/api/v1/responses" && break; sleep 0.5; done; done
wire_of() { case $1 in *@*) echo "${1##*@}";; *) echo responses;; esac; }  # a variant's wire format
path_of() { case $1 in chat) echo /api/v1/chat/completions;; messages) echo /api/v1/messages;; responses) echo /api/v1/responses;;
  *) echo "unknown wire format: $1 (responses, chat or messages)" >&2; exit 1;; esac; }
lua() { local f body; f=$(mktemp --suffix .lua)  # $1 key, $2 wire format
  case ${2:-responses} in
    chat) body='{"model":"bench/fake","messages":[{"role":"user","content":"Say hello"}],"stream":'$STREAM'}';;
    messages) body='{"model":"bench/fake","max_tokens":4096,"messages":[{"role":"user","content":"Say hello"}],"stream":'$STREAM'}';;
    *) body='{"model":"bench/fake","input":"Say hello","stream":'$STREAM'}';;
  esac
  printf 'wrk.method="POST"\nwrk.headers["Content-Type"]="application/json"\nwrk.headers["Authorization"]="Bearer %s"\nwrk.body=[[%s]]\n' "$1" "$body" >"$f"; echo "$f"; }
ticks() { # user + system clock ticks of process $1 (0 without one)
  if [ -n "${1:-}" ]; then awk '{print $14 + $15}' "/proc/$1/stat"; else echo 0; fi; }
measure() { # $1 url $2 lua $3 connections $4 seconds [$5 the gateway's pid: its CPU per request is printed too]
  local before out; before=$(ticks "${5:-}")
  out=$(taskset -c 0 wrk -t1 -c"$3" -d"$4s" -s "$2" --latency "$1")
  echo "$out" | awk -v m="$METRIC" -v before="$before" -v after="$(ticks "${5:-}")" -v hz="$(getconf CLK_TCK)" \
    -v pid="${5:-}" '
    /requests in/ {n=$1}
    /Requests\/sec/ {rps=$2}
    /^ +50%/ {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v=v*1000}; p50=v}
    END {out = (m == "rps" ? rps : p50); if (pid != "" && n > 0) out = out " (" int((after - before) / hz * 1e6 / n) " us)"; print out}'; }
up=$(lua sk-bench-upstream)
for variant in "$@"; do dir=${variant%%:*}; dir=$(cd "${dir:-.}" && pwd)
  set_=${variant##*:}; wire=$(wire_of "$set_"); path_of "$wire" >/dev/null
  measure "http://127.0.0.1:${PORT[$dir]}$(path_of "$wire")" "$(lua "${KEYS[${set_%@*}]}" "$wire")" "$CONN" 2 >/dev/null; done
echo "metric: $METRIC at $CONN connection(s), stream=$STREAM, $DUR s per measure (the upstream's own at 1 connection)"
variants=("$@"); n=${#variants[@]}
for round in $(seq "$ROUNDS"); do
  line="round $round | upstream $(measure "http://127.0.0.1:$UPSTREAM_PORT/v1/responses" "$up" 1 3)"
  # The variants are measured in an order rotated by one each round (the one measured right after the upstream
  # changes), and printed in the order given.
  declare -A result=()
  for k in $(seq 0 $((n - 1))); do i=$(((k + round - 1) % n)); variant=${variants[$i]}
    dir=${variant%%:*}; dir=$(cd "${dir:-.}" && pwd)
    set_=${variant##*:}; wire=$(wire_of "$set_")
    result[$i]=$(measure "http://127.0.0.1:${PORT[$dir]}$(path_of "$wire")" "$(lua "${KEYS[${set_%@*}]}" "$wire")" "$CONN" "$DUR" \
      "${GPID[$dir]}")
  done
  for i in $(seq 0 $((n - 1))); do line="$line | ${variants[$i]} ${result[$i]}"; done
  echo "$line"
done
