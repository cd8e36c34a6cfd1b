"""Summary statistics the benchmarks print: percentiles, min / median / max, the machine's load average."""
from __future__ import annotations

import math
import os
import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile: the smallest value with at least `fraction` of the values at or below it."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))]


def spread(values: Sequence[float], digits: int = 0, *, labels: bool = False, separator: str = " / ",
           width: int = 0) -> str:
    """min / median / max of `values` with `digits` decimals and thousands separated; `labels` names each."""
    shown = [f"{value:{width or ''},.{digits}f}" for value in (min(values), statistics.median(values), max(values))]
    if labels:
        shown = [f"{label} {text}" for label, text in zip(("min", "median", "max"), shown)]
    return separator.join(shown)


def summary_ms(samples: Sequence[float]) -> str:
    """Count, p50, p95 and min of latencies measured in seconds, shown in milliseconds."""
    return (f"n={len(samples)} p50={statistics.median(samples) * 1000:.1f} ms "
            f"p95={percentile(samples, 0.95) * 1000:.1f} ms min={min(samples) * 1000:.1f} ms")


def load_average() -> str:
    """The machine's load average over 1, 5 and 15 minutes, e.g. `1.2/0.9/0.7`."""
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def machine_note(setting: str = "client, gunicorn and PostgreSQL on the same host over loopback") -> str:
    """One line on the machine the figures were taken on: cores, load average, what shares it."""
    return f"machine: {os.cpu_count()} cores shared with other work (load average {load_average()}); {setting}"
