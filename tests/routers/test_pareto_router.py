"""`pareto-router` end to end, and the catalog's `quality_scores` (load_catalog, validation, the admin form)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from inference.catalog_loader import CatalogError, load_catalog
from inference.models import Model
from tests.routers.conftest import CODE_PROMPT, ask, generations, set_catalog, stage_of, upstream_of

# pc/dominated is dearer than pb/balanced and scores lower: it is not on the frontier
PARETO = {
    "pa/cheap": ("0.0000001", "0.0000002", 8000, {"programming": 0.6}),
    "pb/balanced": ("0.000001", "0.000002", 8000, {"programming": 0.85}),
    "pc/dominated": ("0.000002", "0.000004", 8000, {"default": 0.8}),
    "pd/strong": ("0.00001", "0.00002", 8000, {"programming": 0.95}),
    "pe/unscored": ("0.00000001", "0.00000001", 8000, {}),
}


@pytest.fixture
def pareto_catalog(client, router_catalog):
    from inference.models import Endpoint

    Endpoint.objects.all().delete()
    set_catalog(router_catalog, PARETO)
    return router_catalog


@pytest.mark.parametrize(
    ("plugin", "chosen"),
    [
        ({"id": "pareto-router"}, "pb/balanced"),  # default min_coding_score 0.8
        ({"id": "pareto-router", "min_coding_score": 0.5}, "pa/cheap"),
        ({"id": "pareto-router", "min_coding_score": 0.9}, "pd/strong"),
        ({"id": "pareto-router", "min_coding_score": 1}, "pd/strong"),  # none reaches 1: the best-scoring
    ],
)
def test_the_cheapest_frontier_model_meeting_the_score(client, pareto_catalog, plugin, chosen):
    response = ask(client, CODE_PROMPT, [plugin], model="openrouter/pareto-code")
    assert response.status_code == 200, response.text
    assert response.json()["model"] == chosen
    assert [r.model for r in pareto_catalog.requests] == [upstream_of(chosen)]
    data = stage_of(response.json(), "pareto-router")["data"]
    assert data["frontier"] == ["pa/cheap", "pb/balanced", "pd/strong"]
    assert data["model"] == chosen and data["min_coding_score"] == plugin.get("min_coding_score", 0.8)
    [row] = generations(1)
    assert row.model == chosen and row.requested_model == "openrouter/pareto-code"


def test_pareto_with_the_pool_narrowed_and_without_scores(client, pareto_catalog):
    narrowed = ask(client, CODE_PROMPT, [{"id": "pareto-router", "excluded_models": ["pb/*"]}])
    assert narrowed.json()["model"] == "pc/dominated"  # now on the frontier, and it reaches 0.8
    unscored = ask(client, CODE_PROMPT, [{"id": "pareto-router", "allowed_models": ["pe/*"]}])
    assert unscored.status_code == 400
    assert unscored.json()["error"]["metadata"]["field"] == "plugins[0]"
    assert "quality score" in unscored.json()["error"]["message"]
    bad = ask(client, CODE_PROMPT, [{"id": "pareto-router", "min_coding_score": 2}])
    assert bad.status_code == 400 and bad.json()["error"]["metadata"]["field"] == "plugins[0].min_coding_score"
    tier = ask(client, CODE_PROMPT, [{"id": "pareto-router", "cost_tier": "low"}])
    assert tier.status_code == 400 and tier.json()["error"]["metadata"]["field"] == "plugins[0].cost_tier"
    assert [r.model for r in pareto_catalog.requests] == [upstream_of("pc/dominated")]


CATALOG = {
    "providers": [{"slug": "qp", "api_format": "echo"}],
    "models": [{"slug": "qp/model", "context_length": 1000, "quality_scores": {"default": 0.5, "programming": 0.9}}],
    "endpoints": [{"model": "qp/model", "provider": "qp", "prompt_price": "0", "completion_price": "0"}],
}


@pytest.mark.django_db
def test_load_catalog_reads_and_checks_quality_scores():
    load_catalog(CATALOG)
    assert Model.objects.get(slug="qp/model").quality_scores == {"default": 0.5, "programming": 0.9}
    for scores, problem in (({"poetry": 0.5}, "unknown key 'poetry'"), ({"default": 1.5}, "from 0 to 1")):
        bad = {**CATALOG, "models": [{**CATALOG["models"][0], "slug": "qp/other", "quality_scores": scores}]}
        with pytest.raises(CatalogError, match=problem):
            load_catalog(bad)
    model = Model.objects.get(slug="qp/model")
    model.quality_scores = {"programming": "high"}
    with pytest.raises(ValidationError):
        model.full_clean()


@pytest.mark.django_db
def test_the_admin_edits_quality_scores():
    from django.contrib.auth import get_user_model
    from django.test import Client

    load_catalog(CATALOG)
    model = Model.objects.get(slug="qp/model")
    staff = get_user_model().objects.create_superuser("root", "root@example.com", "pw-for-the-admin-test")
    browser = Client()
    browser.force_login(staff)
    url = f"/admin/inference/model/{model.pk}/change/"
    page = browser.get(url)
    assert page.status_code == 200 and b"quality_scores" in page.content
    form = {
        "slug": model.slug,
        "canonical_slug": model.canonical_slug,
        "name": "",
        "vendor": model.vendor,
        "public": "on",
        "input_modalities": "[]",
        "output_modalities": "[]",
        "context_length": "1000",
        "quality_scores": '{"default": 0.7, "trivia": 0.2}',
        "enabled": "on",
        "endpoints-TOTAL_FORMS": "0",
        "endpoints-INITIAL_FORMS": "0",
        "endpoints-MIN_NUM_FORMS": "0",
        "endpoints-MAX_NUM_FORMS": "1000",
    }
    saved = browser.post(url, form)
    assert saved.status_code == 302, saved.content[:2000]
    assert Model.objects.get(pk=model.pk).quality_scores == {"default": 0.7, "trivia": 0.2}
    refused = browser.post(url, {**form, "quality_scores": '{"default": 7}'})
    assert refused.status_code == 200 and b"from 0 to 1" in refused.content
