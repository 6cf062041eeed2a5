"""How fast this machine runs Python right now: the best of 5 runs of a fixed pure-Python loop,
in ms. The development machines run the same code up to 1.6 times slower in some hours than in
others (docs/performance.md), so each figure in the docs states the calibration it was taken
at; compare two figures only at a similar calibration, or count instructions
(`bench/instructions.py`).

    python bench/calibrate.py            # e.g. "calibration 67.5 ms (load average 0.31)"
"""

from __future__ import annotations

import os
import time


def loop() -> int:
    total = 0
    for i in range(1_000_000):
        total += i * i % 7
    return total


def calibration_ms(runs: int = 5) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        loop()
        best = min(best, time.perf_counter() - start)
    return best * 1000


if __name__ == "__main__":
    load = f" (load average {os.getloadavg()[0]:.2f})" if hasattr(os, "getloadavg") else ""
    print(f"calibration {calibration_ms():.1f} ms{load}")
