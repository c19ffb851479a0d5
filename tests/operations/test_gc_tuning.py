"""A serving process freezes its startup heap and uses GATEWAY_GC_THRESHOLDS (gateway_project/gc_tuning.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]
PROBE = (
    "import gc, json, sys; import gateway_project.asgi; "
    "print(json.dumps([gc.get_freeze_count(), gc.get_threshold(), 'inference.handler' in sys.modules]))"
)


def probe(tmp_path, thresholds: str | None) -> list:
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path}/gc.sqlite3",
        "REDIS_URL": "",
        "DJANGO_SECRET_KEY": "gc-test",
        "GATEWAY_LOG_LEVEL": "WARNING",
    }
    env.pop("GATEWAY_GC_THRESHOLDS", None)
    if thresholds is not None:
        env["GATEWAY_GC_THRESHOLDS"] = thresholds
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_application_freezes_its_startup_heap_with_the_configured_thresholds(tmp_path):
    frozen, thresholds, handler_loaded = probe(tmp_path, None)
    assert frozen > 50_000  # Django, the apps and the data plane's modules, imported before the freeze
    assert handler_loaded
    assert thresholds == [20000, 20, 20]
    assert probe(tmp_path, "1000,5,7")[1] == [1000, 5, 7]
    assert probe(tmp_path, "")[1] == [700, 10, 10]  # empty: Python's own
