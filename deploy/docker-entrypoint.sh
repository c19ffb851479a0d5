#!/bin/sh
# Entry point of the gateway's container image (Dockerfile; docs/deploy.md). One image, several roles:
#
#   serve [uvicorn options]   the gateway (default): the production command line, drained on SIGTERM
#   worker [options]          the observability delivery worker (run_observability_worker)
#   migrate                   apply database migrations (a one-shot job before serving a new version)
#   bootstrap [options]       first organization, admin user and keys; catalog entries the database lacks
#   manage <command> [...]    any management command (aggregate_rankings, budgets_reap, createsuperuser...)
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
  *)
    echo "unknown role '$role': serve, worker, migrate, bootstrap or manage <command>" >&2
    exit 64
    ;;
esac
