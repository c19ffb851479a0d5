# The gateway's container image: docs/deploy.md. Build: docker build -t model-gateway .
# One image, several roles (deploy/docker-entrypoint.sh): serve (default), worker, migrate, bootstrap, manage.

# --- build: the pinned requirements in a virtual environment -------------------------------------------------
FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
COPY requirements.txt /tmp/requirements.txt
RUN /opt/venv/bin/pip install --require-virtualenv -r /tmp/requirements.txt

# --- runtime: the application, its static files, a non-root user ---------------------------------------------
FROM python:3.11-slim AS runtime
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=gateway_project.settings \
    GATEWAY_PORT=8000
RUN groupadd --system --gid 10001 gateway \
    && useradd --system --uid 10001 --gid gateway --home-dir /app --no-create-home --shell /usr/sbin/nologin gateway
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY --chown=root:root . /app
# Static files (admin, Swagger UI, ReDoc) collected into the image: content-hashed names, gzip variants.
# The key below exists for this build step only; the container gets its own from the environment.
RUN DJANGO_SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput -v0 \
    && python -m compileall -q /app /opt/venv >/dev/null \
    && chmod 0755 /app/deploy/docker-entrypoint.sh
USER 10001:10001
EXPOSE 8000
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen(f\"http://127.0.0.1:{os.environ.get('GATEWAY_PORT', '8000')}/health/live\", timeout=2)"]
ENTRYPOINT ["/app/deploy/docker-entrypoint.sh"]
CMD ["serve"]
