"""`s3`: one JSON object per trace, written with `PUT Object` signed with AWS Signature Version 4.

Works with AWS S3 (virtual-hosted URL `https://<bucket>.s3.<region>.amazonaws.com/<key>`) and with
S3-compatible stores through `endpoint` (path-style URL `<endpoint>/<bucket>/<key>`, e.g. MinIO). The object key
comes from `pathTemplate` (default `{prefix}{year}/{month}/{day}/{id}.json`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from string import Formatter
from urllib.parse import quote, urlsplit

from observability.senders.base import USER_AGENT, OutgoingRequest

DEFAULT_TEMPLATE = "{prefix}{year}/{month}/{day}/{id}.json"
UNSIGNED_HEADERS = frozenset({"user-agent", "authorization", "expect"})
TEMPLATE_FIELDS = frozenset({"prefix", "year", "month", "day", "hour", "id", "request_id", "trace_id"})


def template_problem(template: str) -> str | None:
    """Why `pathTemplate` cannot be used, or None."""
    try:
        names = {name for _, name, _, _ in Formatter().parse(template) if name is not None}
    except ValueError as exc:
        return f"invalid template: {exc}"
    unknown = names - TEMPLATE_FIELDS
    if unknown or "" in names:
        return f"unknown placeholder {sorted(unknown or {''})[0]!r} (allowed: {', '.join(sorted(TEMPLATE_FIELDS))})"
    return None


def object_key(trace: dict, config: dict) -> str:
    started = datetime.fromisoformat(trace["started_at"].replace("Z", "+00:00"))
    values = {
        "prefix": config.get("prefix") or "",
        "year": f"{started.year:04d}",
        "month": f"{started.month:02d}",
        "day": f"{started.day:02d}",
        "hour": f"{started.hour:02d}",
        "id": trace["id"],
        "request_id": trace.get("request_id") or trace["id"],
        "trace_id": trace.get("trace_id") or trace["id"],
    }
    return (config.get("pathTemplate") or DEFAULT_TEMPLATE).format(**values).lstrip("/")


def _hmac(key: bytes, message: str) -> bytes:
    return hmac.new(key, message.encode(), hashlib.sha256).digest()


def sign_v4(
    *,
    method: str,
    url: str,
    headers: dict[str, str],
    payload_hash: str,
    access_key: str,
    secret_key: str,
    region: str,
    now: datetime,
    service: str = "s3",
) -> dict[str, str]:
    """`headers` plus x-amz-date and Authorization (AWS Signature Version 4, header-based, no query string)."""
    parts = urlsplit(url)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz_date[:8]
    signed = {k.lower(): v.strip() for k, v in headers.items() if k.lower() not in UNSIGNED_HEADERS}
    signed.update({"host": parts.netloc, "x-amz-date": amz_date, "x-amz-content-sha256": payload_hash})
    names = sorted(signed)
    canonical_headers = "".join(f"{name}:{signed[name]}\n" for name in names)
    signed_headers = ";".join(names)
    canonical_request = "\n".join([method, parts.path or "/", "", canonical_headers, signed_headers, payload_hash])
    scope = f"{day}/{region}/{service}/aws4_request"
    string_to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical_request.encode()).hexdigest()]
    )
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{secret_key}".encode(), day), region), service), "aws4_request")
    signature = hmac.new(key, string_to_sign.encode(), hashlib.sha256).hexdigest()
    authorization = (
        f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={signed_headers}, Signature={signature}"
    )
    return {**headers, "x-amz-date": amz_date, "x-amz-content-sha256": payload_hash, "Authorization": authorization}


def object_url(config: dict, key: str) -> str:
    bucket = config["bucketName"]
    region = config.get("region") or "us-east-1"
    encoded = quote(key, safe="/~")
    if config.get("endpoint"):
        return f"{config['endpoint'].rstrip('/')}/{quote(bucket, safe='')}/{encoded}"
    return f"https://{bucket}.s3.{region}.amazonaws.com/{encoded}"


def build(trace: dict, config: dict, delivery_id: str, now: datetime | None = None) -> OutgoingRequest:
    body = json.dumps({"type": "generation", "delivery_id": delivery_id, "trace": trace}, default=str).encode()
    url = object_url(config, object_key(trace, config))
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
    if config.get("sessionToken"):
        headers["x-amz-security-token"] = config["sessionToken"]
    headers = sign_v4(
        method="PUT",
        url=url,
        headers=headers,
        payload_hash=hashlib.sha256(body).hexdigest(),
        access_key=config["accessKeyId"],
        secret_key=config["secretAccessKey"],
        region=config.get("region") or "us-east-1",
        now=now or datetime.now(UTC),
    )
    return OutgoingRequest(method="PUT", url=url, body=body, headers=headers)
