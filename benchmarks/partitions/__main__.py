"""``python -m benchmarks.partitions``: load each layout's store and time the cold window read.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/membench_partitions REDIS_URL=redis://127.0.0.1:6379/13 \\
    .venv/bin/python -m benchmarks.partitions [--messages 10000000] [--layouts unpartitioned,hash16] \\
        [--operations 500] [--json benchmarks/figures/partitions.json]

Each layout uses the database ``<DATABASE_URL's name>_<layout>`` (its name must contain ``bench``),
kept for the next run: a store loaded with the same figures is reused, so a second run only times.
The load prints its progress; the figures print as a table, the service's p50 beside the floor's.
"""
# ruff: noqa: E402 (the models can only be imported after django.setup())

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/membench_partitions"


def _layout_database(url: str, layout: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"{parts.path}_{layout}"))


def _measure_layout(options: argparse.Namespace) -> int:
    """In the layout's own process: load (or reuse) its store and time the reads."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test")
    os.environ.setdefault("MEMORY_EMBEDDING_MODEL", "")  # vectors are not what this measures
    os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from benchmarks.partitions import measure, store

    loaded = store.store_ensure(
        layout=options.layout, messages=options.messages, tenants=options.tenants, longest=options.longest, seed=0.42
    )
    with store.connect() as pg:
        sizes = store.sizes(pg)
    results = measure.figures(store=loaded, operations=options.operations, seed=options.seed)
    report = {
        "layout": loaded.layout,
        "partitions": loaded.partitions,
        "messages": loaded.messages,
        "conversations": loaded.conversations,
        "tenants": loaded.tenants,
        "load_seconds": loaded.seconds,
        "window_index": store.window_index(loaded.layout),
        "sizes": sizes,
        "figures": [asdict(result) for result in results],
    }
    Path(options.output).write_text(json.dumps(report, indent=2))
    return 0


def _megabytes(size: int) -> str:
    return f"{size / 1024**2:,.1f} MB"


def _print(reports: list[dict[str, Any]]) -> None:
    print(
        "\n| layout | messages | service cold read p50 ms | Redis down p50 ms | postgres floor p50 ms | cold / floor | Redis down / floor | SQL | Redis calls | partitions read |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for report in reports:
        cold, fallback, floor = report["figures"]
        print(
            f"| {report['layout']} | {report['messages']:,} | {cold['p50_ms']} | {fallback['p50_ms']} | {floor['p50_ms']}"
            f" | {cold['ratio_to_floor']} | {fallback['ratio_to_floor']} | {cold['sql_queries']} | {cold['redis_calls']}"
            f" | {cold['notes'].get('partitions_read')} |"
        )
    print(
        "\n| layout | load s | keys and indexes s | vacuum s | table | window index: whole | window index: largest partition | every index: whole |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for report in reports:
        sizes, seconds = report["sizes"], report["load_seconds"]
        window = sizes[report["window_index"]]
        indexes = sum(size["total"] for name, size in sizes.items() if name != "table")
        print(
            f"| {report['layout']} | {seconds['load']:,} | {seconds['keys_and_indexes']:,} | {seconds['vacuum']:,}"
            f" | {_megabytes(sizes['table']['total'])} | {_megabytes(window['total'])}"
            f" | {_megabytes(window['largest_partition'])} | {_megabytes(indexes)} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.partitions", description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000_000, help="message rows of each store")
    parser.add_argument("--tenants", type=int, default=1_000, help="tenants, their sizes skewed")
    parser.add_argument("--longest", type=int, default=3_000, help="messages of the longest conversations")
    parser.add_argument("--layouts", default="unpartitioned,hash16", help="of unpartitioned, hash16, hash64")
    parser.add_argument("--operations", type=int, default=500, help="timed reads per system and layout")
    parser.add_argument("--seed", type=int, default=1, help="picks the conversations read")
    parser.add_argument("--json", default=str(ROOT / "benchmarks" / "figures" / "partitions.json"), help="figures file")
    parser.add_argument("--layout", help=argparse.SUPPRESS)  # one layout, in its own process
    parser.add_argument("--output", help=argparse.SUPPRESS)
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if options.layout:
        return _measure_layout(options)
    database = os.environ.get("DATABASE_URL", DEFAULT_DATABASE)
    reports = []
    for layout in options.layouts.split(","):
        output = Path(options.json).with_suffix(f".{layout}.part")
        print(f"--- {layout}", flush=True)
        arguments = [f"--{name}={getattr(options, name)}" for name in ("messages", "tenants", "longest", "operations", "seed")]
        subprocess.run(
            [sys.executable, "-m", "benchmarks.partitions", *arguments, f"--layout={layout}", f"--output={output}"],
            cwd=ROOT,
            env={**os.environ, "DATABASE_URL": _layout_database(database, layout)},
            check=True,
        )
        reports.append(json.loads(output.read_text()))
        output.unlink()
    _print(reports)
    figures = [figure for report in reports for figure in report["figures"]]
    about = (
        "python -m benchmarks.partitions, one run on a shared 2-core VM, PostgreSQL 15, Redis 7; medians of"
        f" {options.operations} cold reads per system and layout, the newest 50 messages of random conversations"
    )
    layouts = [{key: value for key, value in report.items() if key != "figures"} for report in reports]
    Path(options.json).write_text(json.dumps({"about": about, "figures": figures, "layouts": layouts}, indent=2) + "\n")
    print(f"\nfigures written to {options.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
