"""The pipeline's shared types, under the name the inference code and the apps around it have long imported.

They are defined in the kernel (gateway_project/pipeline.py), below accounts/ and inference/, so that the
kernel and accounts/ can use them without importing inference (docs/architecture.md); this module only
re-exports them.
"""

from gateway_project.pipeline import (
    Candidate,
    Context,
    Credential,
    EndpointFilter,
    OrganizationKeys,
    Outcome,
    Principal,
    SpendLimit,
    Usage,
)

__all__ = [
    "Candidate",
    "Context",
    "Credential",
    "EndpointFilter",
    "OrganizationKeys",
    "Outcome",
    "Principal",
    "SpendLimit",
    "Usage",
]
