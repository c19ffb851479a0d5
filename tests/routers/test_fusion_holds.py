"""`fusion` and the budgets: every hold of a request, the synthesizing turn's included, is taken before any panel
call goes upstream, so a request the budget cannot take whole is refused (402) having cost nothing and sent
nothing; the synthesizing turn is held on its prompt grown by the most the panel's answers can add (`max_chars`
per answer), before the panel runs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

from budgets import services as budget_services
from budgets.models import SpendCounter, SpendReservation
from inference.models import Endpoint, Generation
from inference.routing import candidate_from_endpoint
from metering.estimate import worst_case_cost
from tests.inference.conftest import wait_idle

PANEL = ["cheap/small", "mid/coder"]
INPUT = [{"role": "user", "content": "What is the capital of France?"}]
PLUGIN = {"id": "fusion", "analysis_models": PANEL, "max_chars": 100}
BODY = {"model": "big/large", "input": INPUT, "max_output_tokens": 10, "plugins": [PLUGIN]}


def worst_case(model: str, body: dict) -> Decimal:
    endpoint = Endpoint.objects.select_related("model", "provider").get(model__slug=model)
    return worst_case_cost(body, [candidate_from_endpoint(endpoint)])


def spend(org) -> SpendCounter:
    return SpendCounter.objects.get(scope="workspace", scope_id=str(org.workspace.id))


def test_a_budget_that_cannot_take_the_synthesis_refuses_before_the_panel_runs(client, router_catalog, org):
    # Was: the panel's calls were held and sent, then the synthesizing turn's hold was refused: 402, with the
    # panel's calls charged. A budget that fits the request's own hold, the panel's holds and half again the
    # request's hold takes everything but the synthesis of the panel's answers.
    request_hold = worst_case("big/large", {k: v for k, v in BODY.items() if k != "plugins"})
    panel = {"input": INPUT, "max_output_tokens": 10}
    panel_holds = sum(worst_case(m, {"model": m, **panel}) for m in PANEL)
    limit = (request_hold + panel_holds + request_hold / 2).quantize(Decimal("0.000001"))
    budget_services.budget_put(workspace=org.workspace, interval="daily", limit_usd=limit)

    response = client.post("/responses", json=BODY)

    assert response.status_code == 402, response.text
    assert router_catalog.requests == []  # no panel call went upstream
    wait_idle()
    counter = spend(org)
    assert counter.spent_units == 0 and counter.reserved_units == 0
    assert not SpendReservation.objects.exists()
    assert all(row.cost == 0 for row in Generation.objects.all())


def test_concurrent_fusion_requests_refused_never_ran_their_panel(client, router_catalog, org):
    budget_services.budget_put(workspace=org.workspace, interval="daily", limit_usd=Decimal("0.05"))

    def one(_: int) -> int:
        return client.post("/responses", json=BODY).status_code

    with ThreadPoolExecutor(max_workers=12) as pool:
        statuses = list(pool.map(one, range(24)))
    wait_idle()

    assert set(statuses) <= {200, 402} and 200 in statuses and 402 in statuses, statuses
    models = [r.model for r in router_catalog.requests]
    synthesized = models.count("up-big-large")
    assert synthesized == statuses.count(200)
    assert len(models) == 3 * synthesized  # two panel calls and the synthesis per answered request, none else
    rows = list(Generation.objects.all())
    assert all(row.cost == 0 for row in rows if row.error_code == 402)
    counter = spend(org)
    assert counter.spent_usd == sum(row.cost for row in rows) <= Decimal("0.05")
    assert counter.reserved_units == 0 and not SpendReservation.objects.exists()
