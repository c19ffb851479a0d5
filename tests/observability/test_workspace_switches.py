"""What a destination receives under the settings the public router API added: the destination's `regions`
and `broadcast_generation_cost_allocation`, and the workspace's broadcast and I/O logging switches."""

from __future__ import annotations

from decimal import Decimal

import pytest

from observability.delivery import delivery_payload
from observability.models import OutboxEntry
from observability.payload import sampled
from tests.byok.helpers import make_candidate
from tests.observability.conftest import make_ctx, record_generation
from tests.observability.test_outbox import destination

pytestmark = pytest.mark.django_db


def _payloads(generation) -> dict[str, dict]:
    rows = OutboxEntry.objects.filter(generation_id=generation.id).select_related("destination")
    return {str(r.destination_id): delivery_payload(r) for r in rows}


def test_destinations_default_to_every_region(api):
    assert destination(api)["regions"] == ["global", "europe", "us"]


def test_a_destination_receives_only_the_regions_it_lists(api, org):
    europe = destination(api, name="eu", regions=["europe"])
    everywhere = destination(api, name="all")
    ctx = make_ctx(org)
    ctx.region = "us"
    us_generation = record_generation(org, ctx)
    assert set(_payloads(us_generation)) == {everywhere["id"]}
    ctx = make_ctx(org)
    ctx.region = "europe"
    assert set(_payloads(record_generation(org, ctx))) == {europe["id"], everywhere["id"]}


def test_regions_are_validated(api):
    response = api.post(
        "/api/v1/observability/destinations",
        {"name": "x", "type": "webhook", "config": {"url": "https://h.example.com"}, "regions": ["mars"]},
        format="json",
    )
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"].startswith("regions")


def test_cost_allocation_is_sent_when_asked_and_it_adds_up(api, org):
    with_allocation = destination(api, name="alloc", broadcast_generation_cost_allocation=True)
    without = destination(api, name="plain")
    ctx = make_ctx(org)
    ctx.outcome.candidate = make_candidate(prompt_price=Decimal("0.000001"), completion_price=Decimal("0.000002"))
    # 12 input tokens (2 cached at the prompt price) and 5 output tokens: 12e-6 + 10e-6
    generation = record_generation(org, ctx, cached_tokens=2, cost=Decimal("0.000022"))
    payloads = _payloads(generation)
    assert payloads[with_allocation["id"]]["cost_allocation"] == {
        "input": {"tokens": 10, "cost": "0.00001"},
        "cached_input": {"tokens": 2, "cost": "0.000002"},
        "output": {"tokens": 5, "cost": "0.00001"},
    }
    assert "cost_allocation" not in payloads[without["id"]]


def test_cost_allocation_is_left_out_when_it_does_not_add_up(api, org):
    dest = destination(api, broadcast_generation_cost_allocation=True)
    ctx = make_ctx(org)
    ctx.outcome.candidate = make_candidate()
    generation = record_generation(org, ctx, cost=Decimal("0.5"))  # the provider billed its own figure
    assert "cost_allocation" not in _payloads(generation)[dest["id"]]


def test_broadcast_off_for_the_workspace_sends_nothing(api, org):
    destination(api)
    response = api.patch(
        f"/api/v1/workspaces/{org.workspace.id}", {"is_observability_broadcast_enabled": False}, format="json"
    )
    assert response.status_code == 200
    assert _payloads(record_generation(org)) == {}


def test_io_logging_off_sends_traces_without_input_and_output(api, org):
    dest = destination(api)
    api.patch(f"/api/v1/workspaces/{org.workspace.id}", {"is_observability_io_logging_enabled": False}, format="json")
    payload = _payloads(record_generation(org))[dest["id"]]
    assert payload["privacy_mode"] is True
    assert not {"input", "output", "output_text", "instructions"} & set(payload)
    assert payload["usage"]["input_tokens"] == 12


def test_io_logging_sampling_rate_keeps_input_and_output_for_the_sampled_share(api, org):
    dest = destination(api)
    api.patch(f"/api/v1/workspaces/{org.workspace.id}", {"io_logging_sampling_rate": 0.5}, format="json")
    generations = [record_generation(org) for _ in range(12)]
    for generation in generations:
        payload = _payloads(generation)[dest["id"]]
        expected = sampled(generation.id, org.workspace.id, 0.5)
        assert ("input" in payload) is expected and payload["privacy_mode"] is not expected
    assert 0 < sum(sampled(g.id, org.workspace.id, 0.5) for g in generations) < 12
