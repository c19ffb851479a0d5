"""SDK area `observability` against the live gateway: every destination parses as its typed class."""

from __future__ import annotations

from openrouter import components

TYPED = {
    "webhook": (components.ObservabilityWebhookDestination, {"url": "https://hooks.example.com/in"}),
    "langfuse": (components.ObservabilityLangfuseDestination, {"publicKey": "pk-lf-1234", "secretKey": "sk-lf-5678"}),
    "datadog": (components.ObservabilityDatadogDestination, {"apiKey": "dd-api-key-1234", "mlApp": "gateway"}),
}


def test_destinations_create_list_get_update_delete(sdk, org):
    created = {}
    for type_, (cls, config) in TYPED.items():
        data = sdk.observability.create(
            name=f"{type_} dest", type_=type_, config=config, regions=["europe", "us"],
            broadcast_generation_cost_allocation=True,
        ).data  # fmt: skip
        assert isinstance(data, cls), type(data)
        assert data.regions == ["europe", "us"] and data.broadcast_generation_cost_allocation is True
        created[type_] = data.id

    listed = sdk.observability.list(workspace_id=str(org.workspace.id)).result.data
    assert {d.type: type(d) for d in listed} == {t: cls for t, (cls, _) in TYPED.items()}

    fetched = sdk.observability.get(id=created["langfuse"]).data
    assert isinstance(fetched, components.ObservabilityLangfuseDestination)
    assert fetched.config.secret_key.startswith("sk-l") and "..." in fetched.config.secret_key

    updated = sdk.observability.update(id=created["webhook"], regions=["global"], sampling_rate=0.5).data
    assert isinstance(updated, components.ObservabilityWebhookDestination)
    assert (updated.regions, updated.sampling_rate) == (["global"], 0.5)

    assert sdk.observability.delete(id=created["webhook"]).DELETED is True
    assert created["webhook"] not in {d.id for d in sdk.observability.list().result.data}
