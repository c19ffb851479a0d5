"""What the guardrails say about one key, for the layers below that show or apply it without importing
guardrails (registered in GuardrailsConfig.ready(), docs/architecture.md):

- `key_policy`: the effective policy of a key, whose endpoint filters the catalog applies (GET /models);
- `allowed_data_regions`: the regions the key's requests may arrive through (GET /key);
- `budget_layers`: the spend limits of the key's guardrails, in enforcement order (GET /key's `budgets`).
"""

from __future__ import annotations

from accounts.models import ApiKey
from gateway_project.pipeline import Principal, SpendLimit
from guardrails.policy import EffectivePolicy, effective_policy, rule_spend_limit
from guardrails.selectors import rules_for_key
from guardrails.validation import REGIONS

# Our guardrail scopes -> the public API's budget layer names.
GUARDRAIL_LAYER = {"workspace": "workspace_default_key", "member": "member", "api-key": "api_key"}


def key_policy(principal: Principal) -> EffectivePolicy:
    """The effective guardrail policy of a key (the one its inference requests are held to)."""
    rules = rules_for_key(key_id=principal.key_id, workspace_id=principal.workspace_id, user_id=principal.user_id)
    return effective_policy(rules)


def allowed_data_regions(api_key: ApiKey) -> list[str]:
    """The regions the key's requests may arrive through: every region, narrowed by each guardrail's list."""
    allowed = list(REGIONS)
    rules = rules_for_key(key_id=api_key.id, workspace_id=api_key.workspace_id, user_id=api_key.creator_id)
    for rule in rules:
        if rule.allowed_data_regions is not None:
            allowed = [region for region in allowed if region in rule.allowed_data_regions]
    return allowed


def budget_layers(api_key: ApiKey) -> list[tuple[str, str | None, str | None, SpendLimit]]:
    """(scope, budget_id, guardrail_id, limit) of each guardrail budget of the key, in enforcement order."""
    layers = []
    rules = rules_for_key(key_id=api_key.id, workspace_id=api_key.workspace_id, user_id=api_key.creator_id)
    for rule in rules:
        limit = rule_spend_limit(rule, key_hash=api_key.hash, user_id=api_key.creator_id)
        if limit is not None:
            layers.append((GUARDRAIL_LAYER[rule.scope], None, str(rule.id), limit))
    return layers
