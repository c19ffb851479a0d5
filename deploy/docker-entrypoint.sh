#!/bin/sh
# Entry point of the gateway's container image (Dockerfile; docs/deploy.md). One image, several roles:
#
#   serve [uvicorn options]   the gateway (default): the production command line, drained on SIGTERM
#   worker [options]          the observability delivery worker (run_observability_worker)
#   migrate                   apply database migrations (a one-shot job before serving a new version)
#   bootstrap [options]       first organization, admin user and keys; catalog entries the database lacks
#   manage <command> [...]    any management command (aggregate_rankings, budgets_reap, createsuperuser...)
#   schedule                  the periodic jobs where no cron runs them (docker compose): budgets_reap every
#                             GATEWAY_SCHEDULE_INTERVAL_SECONDS (900), aggregate_rankings and
#                             purge_response_cache --expired once per UTC day (at start, then after midnight)
#
# serve reads GATEWAY_PORT (8000), GATEWAY_WORKERS (1 process; scale with replicas, or set about one per core
# given to the container) and GATEWAY_GRACEFUL_TIMEOUT_SECONDS (30: how long streams in flight may take to
# finish after the drain). The container's stop grace period must exceed GATEWAY_DRAIN_SECONDS (10) +
# GATEWAY_GRACEFUL_TIMEOUT_SECONDS + GATEWAY_SHUTDOWN_DRAIN_SECONDS (10): 60 s with the defaults.
set -eu

role="${1:-serve}"
[ "$#" -gt 0 ] && shift

case "$role" in
  serve)
    workers="${GATEWAY_WORKERS:-1}"
    if [ "$workers" -gt 1 ] && [ -z "${PROMETHEUS_MULTIPROC_DIR:-}" ]; then
      export PROMETHEUS_MULTIPROC_DIR=/tmp/gateway-metrics  # /metrics adds up the worker processes
    fi
    if [ -n "${PROMETHEUS_MULTIPROC_DIR:-}" ]; then
      rm -rf "${PROMETHEUS_MULTIPROC_DIR:?}" && mkdir -p "$PROMETHEUS_MULTIPROC_DIR"  # emptied before start
    fi
    exec python -m gateway_project.serve gateway_project.asgi:application \
      --host 0.0.0.0 --port "${GATEWAY_PORT:-8000}" --workers "$workers" \
      --lifespan on --no-server-header --no-access-log --timeout-keep-alive 75 \
      --timeout-graceful-shutdown "${GATEWAY_GRACEFUL_TIMEOUT_SECONDS:-30}" "$@"
    ;;
  worker) exec python manage.py run_observability_worker "$@" ;;
  migrate) exec python manage.py migrate --noinput "$@" ;;
  bootstrap) exec python manage.py bootstrap "$@" ;;
  manage) exec python manage.py "$@" ;;
  schedule)
    trap 'exit 0' TERM INT
    done_day=""
    while :; do
      python manage.py budgets_reap || echo "budgets_reap failed; next try in one interval" >&2
      today="$(date -u +%F)"
      if [ "$today" != "$done_day" ]; then
        python manage.py aggregate_rankings --no-progress && python manage.py purge_response_cache --expired \
          && done_day="$today" || echo "the daily jobs failed; next try in one interval" >&2
      fi
      sleep "${GATEWAY_SCHEDULE_INTERVAL_SECONDS:-900}" &
      wait $!
    done
    ;;
  *)
    echo "unknown role '$role': serve, worker, migrate, bootstrap, schedule or manage <command>" >&2
    exit 64
    ;;
esac
