"""The garbage collector of a serving process: the startup heap frozen, young collections less frequent.

A gateway process holds a few hundred thousand long-lived objects (Django, the apps, the catalog) that the
cyclic collector re-examined on every full collection: measured in-process (PostgreSQL + Redis, every policy
on, 16 concurrent requests) the collector took about 265 us of CPU per request, a sixth of the request's
cost, most of it in full collections of ~70 ms each. `tune()` runs once the application is imported: it
imports the data plane's hot modules, collects once, moves every object alive then to the permanent
generation (`gc.freeze()`: never examined again, and pages shared with forked workers stay shared), and sets
the collection thresholds from `GATEWAY_GC_THRESHOLDS` (default `20000,20,20`; `700,10,10` is Python's).
Reference cycles are still collected: only how often the collector looks changes. A request leaves none
(tests/inference/test_reference_cycles.py): its objects are freed by reference counting when it ends, so the
young collections find nothing to free and the older ones, which walk every object that survived and pause
every request in flight while they do, hardly ever come (bench/gc_cost.sh measures both).
"""

from __future__ import annotations

import gc

from django.conf import settings
from django.utils.module_loading import import_string


def tune() -> None:
    for path in (*settings.GATEWAY_INFERENCE_MIDDLEWARE, "inference.handler.handle"):
        try:
            import_string(path)
        except ImportError:  # a misconfigured path fails on the first request, with its own error
            pass
    thresholds = settings.GATEWAY_GC_THRESHOLDS
    if thresholds:
        gc.set_threshold(*thresholds)
    gc.collect()
    gc.freeze()
