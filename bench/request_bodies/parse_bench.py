"""Cost of the request-body rules (api.bodies.parse_json_object) against a bare json.loads.

Prints the median time of each over a few bodies up to the 1 MiB cap: a realistic 500-item update, the
same padded to the cap, and hostile ones (many small arrays, a 2 KB body nested 1,000 deep).
Run: .venv/bin/python bench/request_bodies/parse_bench.py
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from api.bodies import parse_json_object  # noqa: E402
from core.errors import InvalidInput  # noqa: E402

CAP = 1_048_576


def bodies() -> dict[str, bytes]:
    update = {"updates": [{"id": f"app_{i:020d}", "stage": "interview", "decision": "accepted",
                           "enrolled": False, "send_decision": True} for i in range(500)]}
    padded = {"updates": update["updates"], "padding": "x" * (CAP - len(json.dumps(update)) - 20)}
    many_arrays = "[" + ",".join(["[]"] * ((CAP - 20) // 3)) + "]"
    return {
        "500-item update": json.dumps(update).encode(),
        "500 items padded to 1 MiB": json.dumps(padded).encode(),
        "1 MiB of empty arrays": ('{"a": ' + many_arrays + "}").encode(),
        "2 KB nested 1,000 deep": ('{"a":' + "[" * 999 + "1" + "]" * 999 + "}").encode(),
    }


def median_ms(function, raw: bytes, rounds: int = 15) -> float:
    timings = []
    for _ in range(rounds):
        started = time.perf_counter()
        try:
            function(raw)
        except (InvalidInput, RecursionError):
            pass
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def main() -> None:
    print(f"{'body':<28} {'bytes':>9} {'json.loads ms':>14} {'body rules ms':>14}")
    for name, raw in bodies().items():
        print(f"{name:<28} {len(raw):>9} {median_ms(json.loads, raw):>14.2f} "
              f"{median_ms(parse_json_object, raw):>14.2f}")


if __name__ == "__main__":
    main()
