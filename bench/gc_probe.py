"""Run the gateway (`python -m gateway_project.serve ...`, same arguments) with the cyclic garbage collector
observed, for bench/gc_cost.sh.

- SIGUSR1 writes GC_PROBE_OUT (JSON): per generation the collections, their CPU time (`time.process_time`
  around each collection, from `gc.callbacks`), the longest one since the previous report, and the objects
  they freed; the process's CPU time; the objects the collector tracks and the frozen ones.
- SIGUSR2, sent twice: the first collects and makes the collector keep what it finds (`gc.DEBUG_SAVEALL`), the
  second collects again and writes GC_PROBE_OUT + ".garbage": the types of the objects that were garbage in
  reference cycles in between, most frequent first, and for each type one cycle it is in.
"""

from __future__ import annotations

import collections
import gc
import json
import os
import runpy
import signal
import sys
import time

OUT = os.environ.get("GC_PROBE_OUT", "/tmp/gateway-gc-probe.json")
_stats = {generation: {"collections": 0, "cpu_s": 0.0, "longest_s": 0.0, "freed": 0} for generation in (0, 1, 2)}
_started = [0.0]


def _observe(phase: str, info: dict) -> None:
    if phase == "start":
        _started[0] = time.process_time()
        return
    entry = _stats[info["generation"]]
    spent = time.process_time() - _started[0]
    entry["collections"] += 1
    entry["cpu_s"] += spent
    entry["longest_s"] = max(entry["longest_s"], spent)
    entry["freed"] += info["collected"]


def _write_counters(*_) -> None:
    data = {
        "generations": _stats,
        "process_cpu_s": time.process_time(),
        "tracked": len(gc.get_objects()),
        "frozen": gc.get_freeze_count(),
        "thresholds": gc.get_threshold(),
    }
    with open(OUT, "w") as f:
        json.dump(data, f)
    for entry in _stats.values():  # the longest collection is the longest since the last report
        entry["longest_s"] = 0.0


def _cycle(start, garbage: list) -> str:
    inside = {id(obj) for obj in garbage}
    previous = {id(start): None}
    queue = collections.deque([start])
    while queue:
        obj = queue.popleft()
        for ref in gc.get_referents(obj):
            if ref is start:
                path = [obj]
                while previous[id(path[-1])] is not None:
                    path.append(previous[id(path[-1])])
                return " -> ".join(type(o).__qualname__ for o in [*reversed(path), start])
            if id(ref) in inside and id(ref) not in previous:
                previous[id(ref)] = obj
                queue.append(ref)
    return "(reached from a cycle)"


_saving = [False]


def _garbage(*_) -> None:
    gc.collect()
    if not _saving[0]:
        gc.garbage.clear()
        gc.set_debug(gc.DEBUG_SAVEALL)
        _saving[0] = True
        return
    gc.set_debug(0)
    _saving[0] = False
    garbage = list(gc.garbage)
    gc.garbage.clear()
    names = collections.Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in garbage)
    examples: dict[str, str] = {}
    for obj in garbage:
        name = f"{type(obj).__module__}.{type(obj).__qualname__}"
        if name not in examples and not name.startswith("builtins."):
            examples[name] = _cycle(obj, garbage)
    with open(OUT + ".garbage", "w") as f:
        f.write(f"{len(garbage)} objects in reference cycles\n")
        for name, count in names.most_common(40):
            f.write(f"{count:8d}  {name}  {examples.get(name, '')}\n")


gc.callbacks.append(_observe)
signal.signal(signal.SIGUSR1, _write_counters)
signal.signal(signal.SIGUSR2, _garbage)
sys.argv = ["gateway_project.serve", *sys.argv[1:]]
runpy.run_module("gateway_project.serve", run_name="__main__", alter_sys=True)
