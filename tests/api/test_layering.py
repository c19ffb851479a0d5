"""The layering rule of docs/architecture.md, checked on the source: every import (module level, inside
functions and classes, and `import_module`/`import_string` calls with a literal name) of every package of the
project against the rank table below.

    kernel < accounts < shared services < inference < policy apps < delivery apps

A package imports only packages of a lower rank (and itself). Two policy apps do not import each other: each
plugs into the pipeline on its own (registries filled in AppConfig.ready(), settings-configured middleware paths,
signals), so any of them can be left out; the few edges `ALLOWED_SIDEWAYS` lists are the exceptions, each with
its reason. Delivery apps sit at the top, where nothing but the composition roots imports them, and may use
each other. The kernel's composition roots (settings, urls, asgi, wsgi) name the apps: that is their job.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KERNEL = "gateway_project"
# Rank of every top-level package of the project (docs/architecture.md, "The layers").
RANKS = {
    KERNEL: 0,  # settings, errors, the API base classes, policy versions and caches, the pipeline's shared types
    "accounts": 1,  # organizations, workspaces, users, API keys, key authentication
    "metering": 2,  # shared services: prices, the worst-case estimate, the hold's units
    "textscan": 2,  # shared services: the text detectors, the texts of a request, the prompt classifier
    "inference": 3,  # the data plane: ingress, routing, providers, the pipeline, accounting, the catalog
    "budgets": 4,  # policy apps: each plugs into the pipeline
    "guardrails": 4,
    "ratelimits": 4,
    "presets": 4,
    "responsecache": 4,
    "byok": 4,
    "rankings": 4,
    "observability": 5,  # delivery apps: read what the layers below recorded, deliver it or operate the project
    "analytics": 5,
    "audit": 5,
    "scim": 5,
    "operations": 5,
    "scripts": 6,  # tools outside the served project (fuzzers, benchmarks): above everything
    "bench": 6,
}
POLICY = 4
# The kernel modules whose job is to name the apps (Django's settings and ROOT_URLCONF, the ASGI/WSGI entry points).
COMPOSITION_ROOTS = {
    "gateway_project/settings.py",
    "gateway_project/urls.py",
    "gateway_project/asgi.py",
    "gateway_project/wsgi.py",
}
# (importing app, imported module): sideways imports between policy apps that are allowed, with the reason.
ALLOWED_SIDEWAYS = {
    # The database store of the rate limits counts its windows with the spend counters' SQL primitives (one
    # statement per check, the same functions on every database), which budgets owns and migrates; a rate limit
    # without budgets is not a deployment this project ships.
    ("ratelimits", "budgets.counter_sql"),
}
DYNAMIC_IMPORTS = {"import_module", "import_string", "__import__"}
NOT_PACKAGES = {"tests", "docs", "deploy", "catalog"}  # test code, documentation, deployment files, catalog data


def project_packages() -> set[str]:
    """The project's top-level packages (directories holding Python files), tests and data aside."""
    return {
        path.parent.name
        for path in ROOT.glob("*/*.py")
        if not path.parent.name.startswith(".") and path.parent.name not in NOT_PACKAGES
    }


def imported_names(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in `tree`, wherever it stands; `module` resolves relative ones."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: -node.level]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            function = node.func
            called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            if called in DYNAMIC_IMPORTS and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
    return found


def violations(relative_path: str, source: str, ranks: dict[str, int] = RANKS) -> list[str]:
    """`path:line imports name (why)` for each import of one source file against the rank table."""
    package = relative_path.split("/")[0]
    module = relative_path.removesuffix(".py").replace("/", ".")
    if relative_path.endswith("__init__.py"):
        module = module.removesuffix(".__init__") + ".__init__"
    if relative_path in COMPOSITION_ROOTS:
        return []
    found = []
    for line, name in imported_names(ast.parse(source, relative_path), module):
        target = name.split(".")[0]
        if target == package or target not in ranks:
            continue  # itself, the standard library or a dependency
        here, there = ranks[package], ranks[target]
        if there > here:
            found.append(f"{relative_path}:{line} imports {name} (rank {there} above {package}'s {here})")
        elif there == here == POLICY and (package, name) not in ALLOWED_SIDEWAYS:
            found.append(f"{relative_path}:{line} imports {name} (sideways between two policy apps)")
    return found


def offending_imports() -> tuple[int, list[str]]:
    checked, offending = 0, []
    for package in sorted(RANKS):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            offending += violations(relative, path.read_text(encoding="utf-8"))
            checked += 1
    return checked, offending


def test_every_package_has_a_rank():
    assert project_packages() == set(RANKS), "give each package a rank in RANKS (docs/architecture.md)"


def test_no_package_imports_one_above_it_or_a_policy_app_beside_it():
    checked, offending = offending_imports()
    assert checked > 400  # the walk found the sources
    assert not offending, f"{len(offending)} imports against the layering rule (docs/architecture.md):\n" + "\n".join(
        offending
    )


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        (
            "gateway_project/api/x.py",
            "from accounts.models import ApiKey\n",
            ["gateway_project/api/x.py:1 imports accounts.models (rank 1 above gateway_project's 0)"],
        ),
        (
            "gateway_project/x.py",
            "def f():\n    import inference.models\n",
            ["gateway_project/x.py:2 imports inference.models (rank 3 above gateway_project's 0)"],
        ),
        (
            "gateway_project/x.py",
            "import importlib\nimportlib.import_module('budgets.settler')\n",
            ["gateway_project/x.py:2 imports budgets.settler (rank 4 above gateway_project's 0)"],
        ),
        (
            "accounts/selectors.py",
            "class A:\n    def f(self):\n        from inference.models import Generation\n",
            ["accounts/selectors.py:3 imports inference.models (rank 3 above accounts's 1)"],
        ),
        (
            "inference/routing.py",
            "from byok import routing\n",
            ["inference/routing.py:1 imports byok (rank 4 above inference's 3)"],
        ),
        (
            "metering/estimate.py",
            "from inference.pipeline.context import Candidate\n",
            ["metering/estimate.py:1 imports inference.pipeline.context (rank 3 above metering's 2)"],
        ),
        (
            "budgets/key_budgets.py",
            "from guardrails.selectors import rules_for_key\n",
            ["budgets/key_budgets.py:1 imports guardrails.selectors (sideways between two policy apps)"],
        ),
        (
            "responsecache/services.py",
            "from audit.recording import record_operation\n",
            ["responsecache/services.py:1 imports audit.recording (rank 5 above responsecache's 4)"],
        ),
        ("inference/routing.py", "from . import credentials\nfrom accounts.principal import Principal\n", []),
        ("ratelimits/db_store.py", "from budgets.counter_sql import window\n", []),  # allowed, with its reason
        (
            "ratelimits/middleware.py",
            "from budgets import estimate\n",
            ["ratelimits/middleware.py:1 imports budgets (sideways between two policy apps)"],
        ),
        ("observability/x.py", "from guardrails.validation import REGIONS\nfrom audit import models\n", []),
        ("gateway_project/urls.py", "from inference import urls\n", []),  # a composition root
        ("byok/apps.py", "from inference.credentials import register_organization_keys\n", []),  # downward
        ("inference/x.py", "import orjson\nfrom django.db import models\n", []),  # dependencies
    ],
)
def test_the_checker_reports_each_forbidden_edge_with_its_line(path, source, expected):
    assert violations(path, source) == expected
