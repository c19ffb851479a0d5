"""Reads of the observability app, including the hot-path lookup of a workspace's live destinations."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass

from accounts.models import Workspace
from accounts.selectors import workspace_get
from gateway_project.api.errors import GatewayError
from gateway_project.policy_versions import on_scope_change
from observability.filters import reads_io
from observability.models import Destination


@dataclass(frozen=True, slots=True)
class DestinationRoute:
    """What the outbox receiver needs of a destination, cached per policy version (no ORM on the hot path).

    `filter_rules` are not here: the delivery worker evaluates them; `reads_io` says whether they read the
    input or output text (which must then be stored even when no destination receives it)."""

    id: uuid.UUID
    api_key_hashes: frozenset[str] | None
    sampling_rate: float
    reads_io: bool
    privacy_mode: bool
    broadcast_generation_cost: bool
    broadcast_generation_identity: bool
    broadcast_generation_request_context: bool
    broadcast_generation_cost_allocation: bool = False
    regions: frozenset[str] | None = None  # data regions whose requests it receives; None: every region
    io_logging: bool = True  # the workspace's is_observability_io_logging_enabled
    io_sampling_rate: float = 1.0  # the workspace's io_logging_sampling_rate


def destination_queryset(*, organization_id):
    return Destination.objects.filter(organization_id=organization_id, deleted_at__isnull=True)


def destination_list(*, organization_id, workspace_id: str | None = None):
    queryset = destination_queryset(organization_id=organization_id).select_related("workspace")
    if workspace_id:
        workspace = workspace_get(organization_id=organization_id, id_or_slug=workspace_id)
        queryset = queryset.filter(workspace=workspace)
    return queryset


def destination_get(*, organization_id, destination_id) -> Destination:
    try:
        destination_id = uuid.UUID(str(destination_id))
    except ValueError:
        raise GatewayError(404, "Destination not found") from None
    destination = destination_queryset(organization_id=organization_id).filter(id=destination_id).first()
    if destination is None:
        raise GatewayError(404, "Destination not found")
    return destination


def _load_routes(workspace_id) -> tuple[DestinationRoute, ...]:
    """The workspace's enabled destinations, with the workspace's observability switches applied: none when
    broadcast is off; input and output only when I/O logging is on, for its sampled share of generations."""
    workspace = (
        Workspace.objects.filter(id=workspace_id)
        .values("is_observability_broadcast_enabled", "is_observability_io_logging_enabled", "io_logging_sampling_rate")
        .first()
    )
    if workspace is None or not workspace["is_observability_broadcast_enabled"]:
        return ()
    rows = Destination.objects.filter(workspace_id=workspace_id, deleted_at__isnull=True, enabled=True)
    return tuple(
        DestinationRoute(
            id=d.id,
            api_key_hashes=frozenset(d.api_key_hashes) if d.api_key_hashes is not None else None,
            sampling_rate=d.sampling_rate,
            reads_io=reads_io(d.filter_rules),
            privacy_mode=d.privacy_mode,
            broadcast_generation_cost=d.broadcast_generation_cost,
            broadcast_generation_identity=d.broadcast_generation_identity,
            broadcast_generation_request_context=d.broadcast_generation_request_context,
            broadcast_generation_cost_allocation=d.broadcast_generation_cost_allocation,
            regions=frozenset(d.regions) if d.regions is not None else None,
            io_logging=workspace["is_observability_io_logging_enabled"],
            io_sampling_rate=workspace["io_logging_sampling_rate"],
        )
        for d in rows
    )


class _RouteCache:
    """Enabled destinations per workspace, valid for one policy version (Destination changes bump it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version: int | None = None
        self._entries: dict = {}

    def get(self, version: int | None, workspace_id) -> tuple[DestinationRoute, ...]:
        if version is None:
            return _load_routes(workspace_id)
        with self._lock:
            if version != self._version:
                self._version, self._entries = version, {}
            cached = self._entries.get(workspace_id)
        if cached is not None:
            return cached
        routes = _load_routes(workspace_id)
        with self._lock:
            if self._version == version:
                self._entries[workspace_id] = routes
        return routes

    def clear(self) -> None:
        with self._lock:
            self._version, self._entries = None, {}


route_cache = _RouteCache()
on_scope_change(lambda scope: route_cache.clear())  # a change in any organization (rare): routes are reloaded


def workspace_routes(*, workspace_id, policy_version: int | None) -> tuple[DestinationRoute, ...]:
    """The enabled destinations of a workspace, from the per-policy-version cache."""
    if workspace_id is None:
        return ()
    return route_cache.get(policy_version, workspace_id)
