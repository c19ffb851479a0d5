"""The plugin registry: each plugin id of the contract maps to an implementation, or is refused.

The contract names ten plugin kinds. A request (or a preset) that names a kind with no implementation here
gets a 400 naming the plugin and saying it is not supported yet: nothing is accepted and then ignored.
An implementation is a `Plugin`: `check(name, plugin)` validates the plugin object's own fields (400 naming
them); `run(ctx, plugin, loop)` runs it before the first upstream turn (see inference.servertools.loop).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gateway_project.api.errors import validation_error

PLUGIN_IDS = frozenset(
    {
        "auto-router",
        "auto-beta-router",
        "moderation",
        "web",
        "web-fetch",
        "file-parser",
        "response-healing",
        "context-compression",
        "pareto-router",
        "fusion",
    }
)


@dataclass(frozen=True, slots=True)
class Plugin:
    """One implemented plugin kind."""

    id: str
    check: Callable[[str, dict[str, Any]], None]  # validates the plugin object's fields (400 naming them)
    # (ctx, plugin object, loop state) before the first turn: may add to the input and the sources; its fee
    run: Callable[[Any, dict[str, Any], Any], Awaitable[Decimal]]
    max_fee: Callable[[Any, dict[str, Any]], Decimal] = lambda ctx, plugin: Decimal(0)  # held before it runs
    # (ctx, plugin object, field) before the first turn: 400 naming `field` when it cannot run (no engine, ...)
    ready: Callable[[Any, dict[str, Any], str], None] = lambda ctx, plugin, field: None
    # (ctx, plugin object, body, candidate) -> the body sent to that candidate, on every turn and attempt (a file
    # parsed for a model that cannot read files, a prompt cut to its context); raises ProviderError to skip it
    shape: Callable[[Any, dict[str, Any], dict[str, Any], Any], dict[str, Any]] | None = None
    shape_last: bool = False  # shapes after the others (context-compression measures what they produced)
    # (ctx, plugin object, loop state) after the last turn, before a JSON answer is sent (never for a stream)
    finish: Callable[[Any, dict[str, Any], Any], Awaitable[None]] | None = None
    # (ctx, plugin object) -> the most UTF-8 bytes `run` can add to the first turn's prompt, when it calls
    # upstream itself: the first model turn is then held on a prompt grown by it before the plugin runs
    prompt_growth: Callable[[Any, dict[str, Any]], int] = lambda ctx, plugin: 0
    chooses_model: bool = False  # a router: it runs in routing (inference/routers), not in the server-tool loop


REGISTRY: dict[str, Plugin] = {}
IMPLEMENTATIONS: tuple[str, ...] = (
    "inference.plugins.web",
    "inference.plugins.web_fetch",
    "inference.plugins.response_healing",
    "inference.plugins.file_parser",
    "inference.plugins.context_compression",
    "inference.plugins.moderation",
    "inference.plugins.routers",
    "inference.plugins.fusion",
)
_loaded = False


def load() -> dict[str, Plugin]:
    """The registry, with the implementation modules imported (they register themselves) on first use."""
    global _loaded
    if not _loaded:
        import importlib

        for module in IMPLEMENTATIONS:
            importlib.import_module(module)
        _loaded = True
    return REGISTRY


def register(plugin: Plugin) -> Plugin:
    if plugin.id not in PLUGIN_IDS:
        raise ValueError(f"{plugin.id!r} is not a plugin id of the contract")
    REGISTRY[plugin.id] = plugin
    return plugin


def check_plugin(name: str, plugin: dict[str, Any]) -> None:
    """400 unless the plugin's kind is implemented and its fields are valid."""
    plugin_id = plugin.get("id")
    if not isinstance(plugin_id, str) or plugin_id not in PLUGIN_IDS:
        raise validation_error(f"{name}.id", f"must be one of {', '.join(sorted(PLUGIN_IDS))}")
    implementation = load().get(plugin_id)
    if implementation is None:
        raise validation_error(f"{name}.id", f"plugin '{plugin_id}' is not supported yet by this gateway")
    implementation.check(name, plugin)


def enabled_plugins(body: dict[str, Any]) -> list[tuple[Plugin, dict[str, Any]]]:
    """The request's plugins that run (an object with `enabled: false` is switched off), in request order."""
    found = []
    for plugin in body.get("plugins") or ():
        if plugin.get("enabled") is False:
            continue
        implementation = load().get(plugin.get("id"))
        if implementation is None:  # a preset stored before the kind was refused: refuse it now
            raise validation_error("plugins", f"plugin '{plugin.get('id')}' is not supported yet by this gateway")
        found.append((implementation, plugin))
    return found
