"""Issue 18 row 19: `x-session-id` is held to 256 characters like the body's `session_id`, and sticky-session
entries are namespaced by organization (one organization's session id never steers another's routing)."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import pytest

from inference.routing import clear_caches, remember_session, select_candidates
from tests.inference.conftest import generations
from tests.inference.test_routing_select import SNAPSHOT, ctx


@pytest.mark.django_db(transaction=True)
def test_a_long_session_header_is_refused_naming_it(http):
    body = {"model": "echo/echo-1", "input": "hi"}
    response = http.post("/responses", json=body, headers={"x-session-id": "s" * 257})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["metadata"]["field"] == "x-session-id" and "256" in error["message"]
    ok = http.post("/responses", json=body, headers={"x-session-id": "s" * 256})
    assert ok.status_code == 200
    [row] = generations(1)
    assert row.session_id == "s" * 256


def _in_org(org_id, **body):
    context = ctx(**body)
    context.principal = SimpleNamespace(organization_id=org_id)
    return context


def test_sticky_sessions_are_per_organization():
    clear_caches()
    mine, theirs = uuid.uuid4(), uuid.uuid4()
    remember_session(_in_org(mine, session_id="shared"), SNAPSHOT["a/one"][2])
    first = select_candidates(_in_org(mine, model="a/one", session_id="shared"), SNAPSHOT)[0]
    other = select_candidates(_in_org(theirs, model="a/one", session_id="shared"), SNAPSHOT)[0]
    assert first.provider_slug == "dear"  # the session's own organization sticks to its endpoint
    assert other.provider_slug == "cheap"  # another organization with the same session id does not
    clear_caches()
