"""The s3 sender: object keys, and Signature Version 4 checked against botocore's own signer."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

import pytest
import time_machine
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from observability.senders.s3 import build, object_key, sign_v4
from tests.observability.conftest import record_generation
from tests.observability.test_outbox import destination

NOW = datetime(2026, 11, 21, 10, 45, 7, tzinfo=UTC)
TRACE = {"id": "0b6c9a8e-2f1d-4b8e-9a57-1c2d3e4f5a6b", "request_id": "r-1", "started_at": "2026-11-21T10:45:07.123Z"}


def botocore_authorization(method, url, headers, body, access, secret, region, token=None):
    request = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
    with time_machine.travel(NOW, tick=False):
        S3SigV4Auth(Credentials(access, secret, token), "s3", region).add_auth(request)
    return request.headers["Authorization"], request.headers["X-Amz-Date"]


@pytest.mark.parametrize(
    ("url", "region", "token"),
    [
        ("https://my-bucket.s3.eu-west-1.amazonaws.com/traces/2026/11/21/abc.json", "eu-west-1", None),
        ("http://127.0.0.1:9000/my-bucket/a%20b/c%24d.json", "us-east-1", "session-token-1"),
    ],
)
def test_signature_matches_botocore(url, region, token):
    body = b'{"hello": "world"}'
    headers = {"Content-Type": "application/json"}
    if token:
        headers["x-amz-security-token"] = token
    ours = sign_v4(
        method="PUT",
        url=url,
        headers=headers,
        payload_hash=hashlib.sha256(body).hexdigest(),
        access_key="AKIDEXAMPLE",
        secret_key="wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        region=region,
        now=NOW,
    )
    expected, amz_date = botocore_authorization(
        "PUT", url, headers, body, "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", region, token
    )
    assert ours["x-amz-date"] == amz_date == "20261121T104507Z"
    assert ours["Authorization"] == expected


def test_object_key_and_url():
    assert object_key(TRACE, {}) == "2026/11/21/0b6c9a8e-2f1d-4b8e-9a57-1c2d3e4f5a6b.json"
    assert object_key(
        TRACE, {"prefix": "gw/", "pathTemplate": "{prefix}{year}{month}{day}/{hour}/{request_id}.json"}
    ) == ("gw/20261121/10/r-1.json")
    config = {"accessKeyId": "AK", "secretAccessKey": "SK", "bucketName": "logs", "region": "eu-central-1"}
    request = build(TRACE, config, "d-1", now=NOW)
    assert request.method == "PUT"
    assert (
        request.url == "https://logs.s3.eu-central-1.amazonaws.com/2026/11/21/0b6c9a8e-2f1d-4b8e-9a57-1c2d3e4f5a6b.json"
    )
    assert request.headers["Authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=AK/20261121/eu-central-1/s3/aws4_request"
    )
    assert json.loads(request.body)["trace"]["id"] == TRACE["id"]


@pytest.mark.django_db
def test_invalid_path_template_is_400(api):
    body = {
        "name": "b",
        "type": "s3",
        "config": {
            "accessKeyId": "AK",
            "secretAccessKey": "SK",
            "bucketName": "b",
            "pathTemplate": "{prefix}{nope}.json",
        },
    }
    response = api.post("/api/v1/observability/destinations", body, format="json")
    assert response.status_code == 400 and response.json()["error"]["metadata"]["field"] == "config.pathTemplate"


@pytest.mark.django_db
def test_s3_compatible_endpoint_receives_the_object(api, org, receiver):
    from observability.models import OutboxEntry
    from tests.observability.test_worker import make_worker

    config = {
        "accessKeyId": "AK",
        "secretAccessKey": "SK",
        "bucketName": "traces",
        "endpoint": receiver.url,
        "prefix": "gw/",
    }
    destination(api, name="bucket", type="s3", config=config)
    generation = record_generation(org)
    make_worker().drain()
    (received,) = receiver.requests
    assert (
        received.method == "PUT"
        and received.path.startswith("/traces/gw/")
        and received.path.endswith(f"/{generation.id}.json")
    )
    assert received.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AK/")
    assert received.headers["x-amz-content-sha256"] == hashlib.sha256(received.body).hexdigest()
    assert received.json()["trace"]["id"] == str(generation.id)
    assert OutboxEntry.objects.get().status == "delivered"
