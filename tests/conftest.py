"""Shared fixtures: organizations with keys, an authenticated API client, and a real loopback server
running the ASGI application (uvicorn in a thread) for data-plane tests."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass

import pytest
from rest_framework.test import APIClient

from accounts import services
from accounts.models import Organization, OrgRole, User, Workspace
from tests.fakes.fixtures import (  # noqa: F401  (fixtures)
    fake_upstream,
    fake_upstream_server,
    fake_web,
    fake_web_server,
)

# A fixed Fernet key for BYOK and destination secrets in tests (never used outside the test suite), so the
# suite runs the same on a fresh clone, whatever .env or the environment hold.
TEST_ENCRYPTION_KEY = "Mv0OaV5a8TLgq1c9Ps_2Gm8dDZJ1U8wGTu8nwrDzs6M="
os.environ["GATEWAY_BYOK_ENCRYPTION_KEYS"] = TEST_ENCRYPTION_KEY  # for gateway processes that tests start
# The fake upstreams and receivers listen on 127.0.0.1: the SSRF guard allows private addresses in tests
# (tests/security/test_ssrf.py turns it back on with the `settings` fixture).
os.environ["GATEWAY_ALLOW_PRIVATE_URLS"] = "true"


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix, tmp_path_factory):
    """On SQLite, the test database is a file (on tmpfs where there is one), as in production: WAL and the
    busy timeout of settings.py apply, so the loopback server's threads, the accounting writer and the test
    wait for each other's writes. Django's default, one in-memory database in shared-cache mode, answers
    "database table is locked" at once to a reader of a table another connection is writing, which the
    gateway rightly answers 503, and which no deployment can see."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] != "django.db.backends.sqlite3":
        yield
        return
    shm = "/dev/shm"
    folder = tempfile.mkdtemp(prefix="gateway-tests-", dir=shm if os.access(shm, os.W_OK) else None)
    database.setdefault("TEST", {})["NAME"] = os.path.join(folder, "test.sqlite3")
    yield
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _encryption_keys():
    """GATEWAY_BYOK_ENCRYPTION_KEYS for the whole session (tests of key rotation override it with `settings`)."""
    from django.test import override_settings

    with override_settings(GATEWAY_BYOK_ENCRYPTION_KEYS=[TEST_ENCRYPTION_KEY]):
        yield


@pytest.fixture(autouse=True)
def _budget_keeper_by_hand():
    """The in-process app's budget keeper (budgets/keeper.py) runs no thread in tests: a test calls `turn()` when it
    means to renew, retry or reap, and no hold taken by an earlier test is renewed or retried in this one."""
    from budgets import keeper

    keeper.AUTOSTART = False
    keeper._live.clear()
    yield
    keeper._live.clear()


@pytest.fixture(autouse=True)
def _forget_failed_authentications():
    """Every test client comes from 127.0.0.1: one test's unknown keys must not make the next one's 429."""
    from accounts.auth_throttle import failed_authentications

    failed_authentications.reset()
    yield


@pytest.fixture(scope="session", autouse=True)
def _allow_loopback_urls():
    """GATEWAY_ALLOW_PRIVATE_URLS for the whole session: fake upstreams and receivers live on loopback."""
    from django.test import override_settings

    with override_settings(GATEWAY_ALLOW_PRIVATE_URLS=True):
        yield


@dataclass
class OrgFixture:
    """An organization with its default workspace, an admin user and one key of each kind."""

    organization: Organization
    workspace: Workspace
    admin: User
    management_key: str
    inference_key: str
    management_hash: str
    inference_hash: str

    def client(self, key: str | None = None) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key or self.management_key}")
        return client


def make_org(name: str = "Acme") -> OrgFixture:
    organization = services.organization_create(name=name)
    admin = services.user_create(
        organization=organization, username=f"{name.lower()}-admin-{time.time_ns()}", org_role=OrgRole.ADMIN
    )
    management = services.api_key_create(organization=organization, name="mgmt", creator=admin, is_management=True)
    inference = services.api_key_create(organization=organization, name="inference", creator=admin)
    return OrgFixture(
        organization=organization,
        workspace=organization.default_workspace,
        admin=admin,
        management_key=management.raw_key,
        inference_key=inference.raw_key,
        management_hash=management.api_key.hash,
        inference_hash=inference.api_key.hash,
    )


@pytest.fixture
def org(db) -> OrgFixture:
    return make_org("Acme")


@pytest.fixture
def other_org(db) -> OrgFixture:
    return make_org("Globex")


@pytest.fixture
def api(org) -> APIClient:
    """APIClient authenticated with the management key of `org`."""
    return org.client()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerThread:
    """uvicorn serving an ASGI app on 127.0.0.1 in a background thread."""

    def __init__(self, app, port: int | None = None) -> None:
        import uvicorn

        self.port = port or free_port()
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, lifespan="off", log_level="warning", server_header=False
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def gateway_server(django_db_setup, django_db_blocker):
    """The whole gateway (gateway_project.asgi:application) on a loopback port, for the whole session.

    Tests using it need the `transactional_db` fixture (or `django_db(transaction=True)`), so the rows they
    create are committed and visible to the server's threads.
    """
    from gateway_project.asgi import application

    with django_db_blocker.unblock():
        server = ServerThread(application).start()
        yield server
        server.stop()


@pytest.fixture(scope="session", autouse=True)
def _close_data_plane_threads(django_db_setup):
    """Release the data plane's database threads' connections before the test database is dropped: the
    writer threads', the event loops' (`db_thread.shutdown`), and the one of asgiref's thread for
    `sync_to_async(thread_sensitive=True)` outside `async_to_sync` (the data plane's reads, `db_reader`), which
    otherwise stays open and makes the drop fail ("being accessed by other users")."""
    yield
    from asgiref.sync import SyncToAsync
    from django.db import connections

    from gateway_project import db_thread
    from inference import recorder
    from operations.health import health_thread

    recorder.shutdown()
    db_thread.shutdown()
    health_thread.shutdown()
    SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=30)


def pytest_terminal_summary(terminalreporter):
    """Name the tests skipped because a tool is missing here, and how to install it (tests/missing_tools.py)."""
    from tests.missing_tools import MISSING

    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = str(report.longrepr[2]) if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        if reason.startswith(MISSING):
            reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        terminalreporter.section("skipped: tools missing on this machine", yellow=True)
        for reason, count in sorted(reasons.items()):
            terminalreporter.write_line(f"{count} test(s): {reason.removeprefix(MISSING).strip()}")
