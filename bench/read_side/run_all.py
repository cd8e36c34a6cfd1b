"""All read-side benchmarks in one run: page depth, search latency, CSV stream rate and memory.

    DATABASE_URL=postgresql+psycopg://root@127.0.0.1:5432/karibu_bench python bench/read_side/run_all.py
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
SCRIPTS = ("bench_pages.py", "bench_search.py", "bench_csv_stream.py")


def main() -> None:
    for script in SCRIPTS:
        print(f"## {script}", flush=True)
        subprocess.run([sys.executable, str(HERE / script)], check=True)
        print(flush=True)


if __name__ == "__main__":
    main()
