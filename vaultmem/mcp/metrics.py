"""Per-operation counts and timings for a long-running adapter (the MCP server).

`Metrics` records how often each operation ran, how long it took and how often it failed;
`MeteredStore` wraps a `MemoryStore` so every method an adapter calls is recorded without
the adapter timing anything itself. Durations are wall-clock (`time.perf_counter`), which is
a measurement, not business time, so it does not go through the injected clock.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

SAMPLES = 1000  # durations kept per operation for the p95 (a sliding window)


class _Op:
    __slots__ = ("count", "errors", "total", "max", "samples")

    def __init__(self) -> None:
        self.count = 0
        self.errors = 0
        self.total = 0.0
        self.max = 0.0
        self.samples: deque[float] = deque(maxlen=SAMPLES)


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile of `values` (0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


class Metrics:
    """Thread-safe counters: count, errors, total/avg/p95/max milliseconds per operation."""

    def __init__(self, timer: Callable[[], float] = time.perf_counter) -> None:
        self._timer = timer
        self._lock = threading.Lock()
        self._ops: dict[str, dict[str, _Op]] = {}
        self._started = timer()

    def record(self, group: str, name: str, seconds: float, error: bool = False) -> None:
        with self._lock:
            op = self._ops.setdefault(group, {}).setdefault(name, _Op())
            op.count += 1
            op.errors += int(error)
            op.total += seconds
            op.max = max(op.max, seconds)
            op.samples.append(seconds)

    @contextmanager
    def timed(self, group: str, name: str) -> Iterator[None]:
        start = self._timer()
        try:
            yield
        except BaseException:
            self.record(group, name, self._timer() - start, error=True)
            raise
        self.record(group, name, self._timer() - start)

    def snapshot(self) -> dict[str, Any]:
        """Every group and operation with count, errors, total_ms, avg_ms, p95_ms, max_ms."""
        with self._lock:
            groups: dict[str, Any] = {}
            for group, ops in sorted(self._ops.items()):
                groups[group] = {
                    name: {
                        "count": op.count,
                        "errors": op.errors,
                        "total_ms": round(op.total * 1000, 3),
                        "avg_ms": round(op.total * 1000 / op.count, 3) if op.count else 0.0,
                        "p95_ms": round(percentile(list(op.samples), 95) * 1000, 3),
                        "max_ms": round(op.max * 1000, 3),
                    }
                    for name, op in sorted(ops.items())
                }
            return {"since_seconds": round(self._timer() - self._started, 3), **groups}

    def reset(self) -> None:
        with self._lock:
            self._ops.clear()
            self._started = self._timer()


class MeteredStore:
    """A `MemoryStore` whose public method calls are recorded under the group "store"."""

    def __init__(self, store: Any, metrics: Metrics) -> None:
        self._store = store
        self.metrics = metrics

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if name.startswith("_") or not callable(attr):
            return attr
        metrics = self.metrics

        def call(*args: Any, **kwargs: Any) -> Any:
            with metrics.timed("store", name):
                return attr(*args, **kwargs)

        call.__name__ = name
        call.__doc__ = attr.__doc__
        return call
