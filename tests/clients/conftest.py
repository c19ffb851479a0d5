"""Fixtures of the client recipes: the whole gateway on a loopback port with the offline echo model, and
`run_recipe(name)`, which runs a recipe of docs/clients.md exactly as it is written there, with the
environment it reads (`GATEWAY_URL`, `GATEWAY_API_KEY`) pointed at that gateway."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.inference.conftest import echo_catalog, wait_idle  # noqa: F401  (fixtures)

DOC = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
RECIPE = re.compile(r"<!-- recipe: ([\w-]+) -->\s*```(\w+)\n(.*?)```", re.S)


def recipes() -> dict[str, tuple[str, str]]:
    """name → (language, code) of every recipe in docs/clients.md."""
    return {name: (language, code) for name, language, code in RECIPE.findall(DOC.read_text())}


def recipe(name: str) -> str:
    return recipes()[name][1]


@pytest.fixture
def gateway_env(gateway_server, org, echo_catalog, monkeypatch):  # noqa: F811
    """The environment a recipe reads, pointed at the loopback gateway with an inference key."""
    monkeypatch.setenv("GATEWAY_URL", gateway_server.url)
    monkeypatch.setenv("GATEWAY_API_KEY", org.inference_key)
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield {"GATEWAY_URL": gateway_server.url, "GATEWAY_API_KEY": org.inference_key}
    wait_idle()


@pytest.fixture
def run_recipe(gateway_env):
    """`run_recipe(name)` → the namespace the recipe's Python code left (its variables)."""

    def run(name: str) -> dict:
        namespace: dict = {"__name__": f"recipe_{name.replace('-', '_')}"}
        exec(compile(recipe(name), f"docs/clients.md:{name}", "exec"), namespace)
        return namespace

    return run
