"""pytest fixtures of the fake upstream (registered in tests/conftest.py).

- `fake_upstream_server` (session): one started `FakeUpstream` for the whole run.
- `fake_upstream` (function): the same server, reset (recordings cleared, knobs at their defaults) before
  each test. Point endpoints at `fake_upstream.base_url`.
"""

from __future__ import annotations

import pytest

from tests.fakes.fake_upstream import FakeUpstream


@pytest.fixture(scope="session")
def fake_upstream_server():
    server = FakeUpstream().start()
    yield server
    server.stop()


@pytest.fixture
def fake_upstream(fake_upstream_server) -> FakeUpstream:
    fake_upstream_server.reset()
    yield fake_upstream_server
    fake_upstream_server.reset()


@pytest.fixture(scope="session")
def fake_web_server():
    from tests.fakes.fake_web import FakeWeb

    server = FakeWeb().start()
    yield server
    server.stop()


@pytest.fixture
def fake_web(fake_web_server):
    """The fake web (search engines and pages, tests/fakes/fake_web.py), reset before and after each test."""
    fake_web_server.reset()
    yield fake_web_server
    fake_web_server.reset()
