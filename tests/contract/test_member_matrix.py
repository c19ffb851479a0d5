"""Member x provider format, generated from tests/contract/member_matrix.py: each accepted member of each
ingress (the tables of inference/members.py) is sent through the loopback gateway to the fake upstream speaking
each provider format it can reach, and its effect is asserted (what the upstream received, what the client got,
which provider routing chose, what the Generation row says), or the 400 naming it. A table member without an
entry fails `test_every_accepted_member_has_an_entry`; a refused member is checked to be a 400 naming it."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from inference.members import REFUSED, TABLES
from tests.contract.effects import DELETE, FORMATS, MODEL, SHORT, Seen
from tests.contract.member_matrix import KNOWN_DROPS, MATRIX
from tests.inference.conftest import add_endpoint, generations
from tests.servertools.conftest import agent, agent_catalog, call, searxng, text  # noqa: F401  (fixtures)

ENDPOINT = {"responses": "/responses", "chat-completions": "/chat/completions", "messages": "/messages"}
HELLO = [{"role": "user", "content": "Hello"}]
BASE = {
    "responses": {"input": "Hello"},
    "chat-completions": {"messages": HELLO},
    "messages": {"max_tokens": 64, "messages": HELLO},
}
M = "0.000001"  # $1 per million tokens
# The routing catalog, per provider format: model -> [(provider, prompt $/M, completion $/M, provider fields)]
ROUTES = {
    "dc": [
        ("pub", 1, 1, {"publishes_prompts": True}),
        ("trains", 2, 2, {"trains_on_data": True}),
        ("clean", 3, 3, {"zdr": True}),
    ],
    "prompt": [("skew", 1.8, 0.1, {}), ("even", 1, 1, {})],
    "completion": [("skew", 0.1, 1.8, {}), ("even", 1, 1, {})],
    "request": [("fee", 1, 1, {"request_price": "0.02"}), ("nofee", 2, 2, {})],
    "order": [("cheap", 1, 1, {}), ("dear", 5, 5, {})],
    "cheaper": [("only", 0.1, 0.1, {})],
}


def add_routing_catalog(fake) -> None:
    """The models `route-<format>/<case>` of ROUTES (only for the cells whose fragment names one)."""
    from inference.models import Endpoint

    for fmt in FORMATS:
        for case, providers in ROUTES.items():
            for name, prompt, completion, fields in providers:
                provider = f"{case}-{SHORT[fmt]}-{name}"
                fields = dict(fields)
                fee = fields.pop("request_price", None)
                endpoint = add_endpoint(
                    f"route-{SHORT[fmt]}/{case}",
                    provider,
                    api_format=fmt,
                    base_url=fake.base_url,
                    api_key_env="SERVERTOOLS_FAKE_KEY",
                    upstream_model=f"{provider}-up",
                    prompt_price=f"{prompt / 1_000_000:.10f}",
                    completion_price=f"{completion / 1_000_000:.10f}",
                    **fields,
                )
                if fee:
                    Endpoint.objects.filter(id=endpoint.id).update(request_price=Decimal(fee))


def _fill(value, fmt: str):
    if isinstance(value, str):
        return value.replace("{fmt}", SHORT[fmt]).replace("{model}", MODEL[fmt])
    if isinstance(value, list):
        return [_fill(v, fmt) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, fmt) for k, v in value.items()}
    return value


def cells():
    for (ingress, member), entry in sorted(MATRIX.items()):
        for fmt in entry.effects:
            yield pytest.param(ingress, member, fmt, id=f"{ingress}:{member}:{fmt}")


@pytest.mark.parametrize(("ingress", "member", "fmt"), list(cells()))
def test_member_on_provider_format(agent, agent_catalog, searxng, ingress, member, fmt):  # noqa: F811
    entry = MATRIX[ingress, member]
    effect = entry.effects[fmt]
    if "route-" in repr(entry.fragment):
        add_routing_catalog(agent_catalog)
    body = {"model": MODEL[fmt], **BASE[ingress]}
    for key, value in _fill(entry.fragment, fmt).items():
        if value is DELETE:
            body.pop(key, None)
        else:
            body[key] = value
    if entry.script == "search-then-answer":
        agent_catalog.script = [
            call("web_search", '{"query": "q1"}'),
            call("web_search", '{"query": "q2"}'),
            text("Done."),
        ]
    response = agent.post(ENDPOINT[ingress], json=body, headers={"X-Service-Metadata": "enabled", **entry.headers})
    try:
        answer = response.json()
    except (json.JSONDecodeError, ValueError):
        answer = None
    row = None
    if effect.needs_row and response.status_code == 200:
        row = generations(1)[0]
    seen = Seen(
        status=response.status_code,
        answer=answer,
        text=response.text,
        headers=dict(response.headers),
        sent=[r.body for r in agent_catalog.requests],
        row=row,
        fmt=fmt,
    )
    said = response.text[:300] if response.status_code != 200 else ""
    if (ingress, member, fmt) in KNOWN_DROPS and not effect.holds(seen):
        pytest.xfail(f"issue 37: {member} silently dropped on {fmt} ({effect.says})")
    assert effect.holds(seen), f"{effect.says}: {response.status_code} {said} sent={seen.sent[-1:]}"


def test_every_accepted_member_has_an_entry():
    """Every member a table accepts (all but `refused`) has an entry reaching every provider format."""
    missing = [
        f"{ingress}:{name}"
        for ingress, table in TABLES.items()
        for name, member in table.items()
        if member.handling != REFUSED and (ingress, name) not in MATRIX
    ]
    assert not missing, f"accepted members without an entry in tests/contract/member_matrix.py: {missing}"
    stale = [f"{i}:{m}" for i, m in MATRIX if m.split(".")[0] not in TABLES[i]]
    assert not stale, f"entries for members the tables no longer have: {stale}"
    partial = [f"{i}:{m}" for (i, m), e in MATRIX.items() if set(e.effects) != set(FORMATS)]
    assert not partial, f"entries that leave a provider format out: {partial}"


REFUSED_MEMBERS = [
    pytest.param(ingress, name, id=f"{ingress}:{name}")
    for ingress, table in TABLES.items()
    for name, member in table.items()
    if member.handling == REFUSED
]


@pytest.mark.parametrize(("ingress", "name"), REFUSED_MEMBERS)
def test_refused_member_is_400_naming_it(agent, agent_catalog, ingress, name):  # noqa: F811
    body = {"model": MODEL[FORMATS[0]], **BASE[ingress], name: {"any": "value"}}
    response = agent.post(ENDPOINT[ingress], json=body)
    assert response.status_code == 400, response.text
    assert name in json.dumps(response.json()["error"]) and agent_catalog.requests == []
