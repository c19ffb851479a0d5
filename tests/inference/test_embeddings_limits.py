"""/embeddings answers stay bounded: `dimensions` at most GATEWAY_EMBEDDINGS_MAX_DIMENSIONS and inputs x
dimensions at most GATEWAY_EMBEDDINGS_MAX_VALUES, refused with a 400 naming `dimensions` before any routing
(no Generation row, nothing computed). Over the loopback server, on the free echo model."""

from __future__ import annotations

import pytest

from tests.inference.conftest import generations
from tests.inference.test_embeddings import echo_embed  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def assert_refused(response, words: str) -> None:
    assert response.status_code == 400, response.text[:300]
    error = response.json()["error"]
    assert error["metadata"]["field"] == "dimensions" and error["message"].startswith("dimensions: "), error
    assert words in error["message"], error
    assert generations(expected=0) == []


def test_the_reported_request_is_refused_by_the_defaults(http, echo_embed):  # noqa: F811
    """512 inputs x 65,536 dimensions: a 737 MB answer before; now 400 at once."""
    body = {"model": echo_embed, "input": ["some text"] * 512, "dimensions": 65_536}
    assert_refused(http.post("/embeddings", json=body), "must be an integer from 1 to 16384")
    body["dimensions"] = 16_384  # within the dimensions limit, over inputs x dimensions
    assert_refused(http.post("/embeddings", json=body), "512 inputs x 16384 dimensions is 8,388,608 values")


def test_dimensions_limit_is_a_setting(http, echo_embed, settings):  # noqa: F811
    settings.GATEWAY_EMBEDDINGS_MAX_DIMENSIONS = 64
    assert_refused(
        http.post("/embeddings", json={"model": echo_embed, "input": "x", "dimensions": 65}),
        "must be an integer from 1 to 64",
    )
    answer = http.post("/embeddings", json={"model": echo_embed, "input": "x", "dimensions": 64})
    assert answer.status_code == 200 and len(answer.json()["data"][0]["embedding"]) == 64


@pytest.mark.parametrize(
    ("value", "count"),
    [(["a", "b", "c", "d"], 4), ([[1, 2], [3], [4], [5]], 4), ("one text", 1), ([1, 2, 3], 1)],
)
def test_inputs_times_dimensions_limit_is_a_setting(http, echo_embed, settings, value, count):  # noqa: F811
    settings.GATEWAY_EMBEDDINGS_MAX_VALUES = 1000
    dimensions = 1000 // count + 1
    assert_refused(
        http.post("/embeddings", json={"model": echo_embed, "input": value, "dimensions": dimensions}),
        f"{count} inputs x {dimensions} dimensions is {count * dimensions:,} values; at most 1,000",
    )
    answer = http.post("/embeddings", json={"model": echo_embed, "input": value, "dimensions": 1000 // count})
    assert answer.status_code == 200, answer.text
    assert [len(item["embedding"]) for item in answer.json()["data"]] == [1000 // count] * count
