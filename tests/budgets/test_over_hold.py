"""A provider that reports more usage than the request's hold (10 million input tokens, about $100 at $0.00001):
what the client's answer says (`usage.cost`), what the Generation row records (`cost`) and what the spend counter
was charged are one figure, the hold, so recorded spend stays within the limit; the row keeps the provider's
figure in `reported_cost` (`provider_reported_cost` of GET /generation). Without any limit there is no hold: the
provider's figure is charged and answered, and `reported_cost` stays null."""

from __future__ import annotations

from decimal import Decimal

import httpx
import orjson
import pytest

from inference.models import Generation
from tests.budgets.test_e2e import put_budget
from tests.budgets.test_money import FORMATS, counter, fake, hold_of, priced  # noqa: F401 (fixture)
from tests.fakes.fake_formats import Reply
from tests.inference.conftest import generations

pytestmark = pytest.mark.django_db(transaction=True)
BILLED_INPUT = 10_000_000
PRICE = Decimal("0.00001")


def answered_cost(response: httpx.Response, stream: bool) -> Decimal:
    if not stream:
        return Decimal(str(response.json()["usage"]["cost"]))
    for line in response.text.splitlines():
        if line.startswith("data: ") and '"response.completed"' in line:
            return Decimal(str(orjson.loads(line[6:])["response"]["usage"]["cost"]))
    raise AssertionError(response.text)


def ask(gateway_server, org, fake, api_format: str, stream: bool, path: str = "/responses"):  # noqa: F811
    endpoint = priced(fake, "big-bill", api_format=api_format, price=str(PRICE))
    fake.billing = "fixed"  # the usage scripted below, whatever was sent
    fake.script = [Reply(pieces=["Done."], input_tokens=BILLED_INPUT)]
    if path == "/responses":
        body = {"model": endpoint.model.slug, "input": "hi", "max_output_tokens": 10, "stream": stream}
    else:
        body = {"model": endpoint.model.slug, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 10}
    response = httpx.post(
        f"{gateway_server.url}/api/v1{path}",
        json=body,
        headers={"Authorization": f"Bearer {org.inference_key}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return endpoint, body, response


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api_format", FORMATS)
def test_usage_above_the_hold_is_charged_answered_and_recorded_as_the_hold(
    gateway_server,
    org,
    fake,  # noqa: F811
    api_format,
    stream,
):
    # Was: the client's usage.cost said $100.000012 while the row and the counter said $0.000372.
    put_budget(org, "daily", 0.05)
    endpoint, body, response = ask(gateway_server, org, fake, api_format, stream)
    hold = hold_of(endpoint, body)
    [row] = generations(1)
    assert answered_cost(response, stream) == row.cost  # the answer and the ledger agree
    assert 0 < row.cost <= hold  # the request's hold (an upper bound of the provider's bill under the estimate)
    assert counter(org).spent_usd == row.cost <= Decimal("0.05")
    assert row.input_tokens == BILLED_INPUT  # the usage as reported
    assert row.reported_cost is not None and row.reported_cost >= BILLED_INPUT * PRICE  # what the provider says
    lookup = httpx.get(
        f"{gateway_server.url}/api/v1/generation",
        params={"id": str(row.id)},
        headers={"Authorization": f"Bearer {org.inference_key}"},
    ).json()["data"]
    assert Decimal(str(lookup["total_cost"])) == row.cost
    assert Decimal(str(lookup["provider_reported_cost"])) == row.reported_cost


@pytest.mark.parametrize("path", ["/chat/completions", "/messages"])
def test_the_other_wire_formats_answer_the_charged_cost(gateway_server, org, fake, path):  # noqa: F811
    put_budget(org, "daily", 0.05)
    endpoint, body, response = ask(gateway_server, org, fake, "openai-responses", False, path)
    [row] = generations(1)
    assert Decimal(str(response.json()["usage"]["cost"])) == row.cost < Decimal("0.05")
    assert row.reported_cost >= BILLED_INPUT * PRICE and counter(org).spent_usd == row.cost


def test_without_a_limit_the_provider_s_figure_is_charged(gateway_server, org, fake):  # noqa: F811
    _, _, response = ask(gateway_server, org, fake, "openai-responses", False)
    [row] = generations(1)
    assert answered_cost(response, False) == row.cost >= BILLED_INPUT * PRICE
    assert row.reported_cost is None
    assert Generation.objects.count() == 1
