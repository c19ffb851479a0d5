"""The layering rule of docs/architecture.md, checked on the source: every import (module level, inside
functions and classes, and `import_module`/`import_string` calls with a literal name) of the kernel
(gateway_project/), accounts/ and inference/ against the edges the rule forbids.

    kernel (gateway_project/)  <  accounts/  <  inference/  <  byok/

A layer never imports one above it: the kernel imports no app at all (except its composition roots, the
modules that name the apps to assemble the project: settings, urls, asgi, wsgi); accounts imports neither
inference nor byok; inference does not import byok. The dependencies that go the other way are inverted
(registries filled in AppConfig.ready(), settings-configured dotted paths); the types they share live in
gateway_project/pipeline.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KERNEL = "gateway_project"
# The kernel modules whose job is to name the apps (Django's settings and ROOT_URLCONF, the ASGI/WSGI entry points).
COMPOSITION_ROOTS = {
    "gateway_project/settings.py",
    "gateway_project/urls.py",
    "gateway_project/asgi.py",
    "gateway_project/wsgi.py",
}
# (importing package, imported package) pairs the rule forbids, besides "the kernel imports no app".
FORBIDDEN = {("accounts", "inference"), ("accounts", "byok"), ("inference", "byok")}
DYNAMIC_IMPORTS = {"import_module", "import_string", "__import__"}


def project_apps() -> set[str]:
    """The project's Django apps: the top-level packages with an apps.py."""
    return {path.parent.name for path in ROOT.glob("*/apps.py")}


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


def violations(relative_path: str, source: str, apps: set[str]) -> list[str]:
    """`path:line imports name` for each forbidden edge of one source file."""
    package = relative_path.split("/")[0]
    module = relative_path.removesuffix(".py").replace("/", ".")
    if relative_path.endswith("__init__.py"):
        module = module.removesuffix(".__init__") + ".__init__"
    found = []
    for line, name in imported_names(ast.parse(source, relative_path), module):
        target = name.split(".")[0]
        if target == package:
            continue
        kernel_edge = package == KERNEL and target in apps and relative_path not in COMPOSITION_ROOTS
        if kernel_edge or (package, target) in FORBIDDEN:
            found.append(f"{relative_path}:{line} imports {name}")
    return found


def test_no_layer_imports_one_above_it():
    apps = project_apps()
    assert {"accounts", "inference", "byok"} <= apps
    checked = 0
    offending = []
    for package in (KERNEL, "accounts", "inference"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            offending += violations(relative, path.read_text(encoding="utf-8"), apps)
            checked += 1
    assert checked > 100  # the walk found the sources
    assert not offending, "imports against the layering rule (docs/architecture.md):\n" + "\n".join(offending)


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        (
            "gateway_project/api/x.py",
            "from accounts.models import ApiKey\n",
            ["gateway_project/api/x.py:1 imports accounts.models"],
        ),
        (
            "gateway_project/x.py",
            "def f():\n    import inference.models\n",
            ["gateway_project/x.py:2 imports inference.models"],
        ),
        (
            "gateway_project/x.py",
            "import importlib\nimportlib.import_module('budgets.settler')\n",
            ["gateway_project/x.py:2 imports budgets.settler"],
        ),
        (
            "accounts/selectors.py",
            "class A:\n    def f(self):\n        from inference.models import Generation\n",
            ["accounts/selectors.py:3 imports inference.models"],
        ),
        ("inference/routing.py", "from byok import routing\n", ["inference/routing.py:1 imports byok"]),
        ("inference/routing.py", "from . import credentials\nfrom accounts.principal import Principal\n", []),
        ("gateway_project/urls.py", "from inference import urls\n", []),  # a composition root
        ("byok/apps.py", "from inference.credentials import register_organization_keys\n", []),  # downward
    ],
)
def test_the_checker_reports_each_forbidden_edge_with_its_line(path, source, expected):
    assert violations(path, source, {"accounts", "inference", "byok", "budgets"}) == expected
