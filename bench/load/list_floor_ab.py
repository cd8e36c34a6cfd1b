"""The list within the floor, two source trees side by side: both served at once, measured in tight alternation.

`wrk_ratio.py` starts a server per tree and run, so a ratio there carries each server's cold start and the
minutes between the trees' runs. Here each tree's gunicorn (the shipped settings) starts once; then, round after
round, wrk drives `GET /api/v1/applications?limit=50` (the list) and `GET /api/v1/verifications/issuers` (the
floor) for `--duration` seconds on each tree in turn, the order reversed every round, so load from other work
falls on both trees alike. The first `--settle` rounds are shown but left out of the summary: a new worker is
slower until its caches, statements and PostgreSQL's prepared plans are all warm.

    DATABASE_URL=postgresql+psycopg://…/karibu_bench python bench/load/list_floor_ab.py \
        --tree before=/tmp/karibu-main --tree after=. --rounds 6
"""
from __future__ import annotations

import argparse
import statistics
import sys
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.harness.database import bench_institution_id, new_api_key  # noqa: E402
from bench.harness.env import server_env  # noqa: E402
from bench.harness.server import gunicorn  # noqa: E402
from bench.load.wrk_ratio import warm, wrk  # noqa: E402

ENDPOINTS = {"list": "/api/v1/applications?limit=50", "floor": "/api/v1/verifications/issuers"}
CONNECTIONS = 32


def load_average() -> str:
    with open("/proc/loadavg") as averages:
        return "/".join(averages.read().split()[:3])


def spread(values: list[float], fmt: str) -> str:
    """`min / median / max` of `values`, each written with `fmt`."""
    return " / ".join(fmt.format(value) for value in (min(values), statistics.median(values), max(values)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", metavar="NAME=PATH", required=True,
                        help="a source tree to serve (give two)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--settle", type=int, default=3, help="first rounds left out of the summary")
    parser.add_argument("--duration", type=int, default=5, help="seconds of wrk per endpoint and tree")
    arguments = parser.parse_args()
    trees = {name: Path(path).resolve() for name, path in (tree.split("=", 1) for tree in arguments.tree)}
    headers = {"Authorization": f"Bearer {new_api_key(bench_institution_id())}"}
    figures = {name: {endpoint: [] for endpoint in ENDPOINTS} for name in trees}

    with ExitStack() as stack:
        servers = {name: stack.enter_context(gunicorn(source=tree, deployed=True, env=server_env(source=tree)))
                   for name, tree in trees.items()}
        for server in servers.values():
            for path in ENDPOINTS.values():
                warm(server.url + path, headers, requests_count=40)
        for round_number in range(arguments.rounds):
            order = list(servers.items())
            if round_number % 2:
                order.reverse()
            for name, server in order:
                for endpoint, path in ENDPOINTS.items():
                    figures[name][endpoint].append(wrk(server.url + path, arguments.duration, CONNECTIONS,
                                                       headers)["rps"])
            shown = "  ".join(f"{name}: list {figures[name]['list'][-1]:,.0f} floor {figures[name]['floor'][-1]:,.0f}"
                              for name in trees)
            settling = " (settling)" if round_number < arguments.settle else ""
            print(f"round {round_number + 1}{settling}  {shown} req/s  load {load_average()}", flush=True)

    print(f"\nmin / median / max over rounds {arguments.settle + 1} to {arguments.rounds}")
    for name in trees:
        lists = figures[name]["list"][arguments.settle:]
        floors = figures[name]["floor"][arguments.settle:]
        if not lists:
            continue
        ratios = [listed / floor for listed, floor in zip(lists, floors)]
        print(f"{name:8} list {spread(lists, '{:,.0f}')} req/s, floor {spread(floors, '{:,.0f}')} req/s, "
              f"list/floor {spread(ratios, '{:.2f}')}")
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()
