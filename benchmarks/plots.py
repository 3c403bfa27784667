"""Draw the figures of docs/performance.md from the benchmarks' JSON figures.

    .venv/bin/python -m benchmarks.plots [--compare benchmarks/figures/compare.json]
        [--retrieval benchmarks/figures/retrieval.json] [--out docs/img]

The inputs are what the benchmarks write with ``--json PATH``: ``python -m benchmarks.compare``
(``{"figures": [...]}``, one row per system, operation, size and clients) and ``python -m
benchmarks.retrieval`` (``{"methods": [{"name", "recall": {k: recall@k}}, ...]}``, plus an optional
``reference`` drawn as a line). ``benchmarks/figures/`` holds the figures of the runs the documentation
reports; a new run's JSON in their place, then this command, redraws the plots. Needs matplotlib
(requirements-bench.txt); draws PNGs only, no window.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only: no display on a server or in CI
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "benchmarks" / "figures"
IMAGES = ROOT / "docs" / "img"
DPI = 110

# The systems of the side-by-side comparison, in the order the plots show them.
READ_SYSTEMS = ["service", "redis floor", "postgres floor", "LangChain Redis", "LangChain Postgres"]
APPEND_SYSTEMS = ["service", "durable floor", "redis floor", "postgres floor", "LangChain Redis", "LangChain Postgres"]


def _figure(rows: list[dict[str, Any]], *, system: str, operation: str, size: int, clients: int) -> float | None:
    for row in rows:
        if (row["system"], row["operation"], row["size"], row["clients"]) == (system, operation, size, clients):
            return row["p50_ms"]
    return None


def _grouped_bars(
    *, systems: list[str], series: dict[str, list[float | None]], ylabel: str, title: str, path: Path, log: bool
) -> Path:
    figure, axes = plt.subplots(figsize=(8, 4.2))
    width = 0.8 / len(series)
    for index, (label, values) in enumerate(series.items()):
        positions = [number + (index - (len(series) - 1) / 2) * width for number in range(len(systems))]
        heights = [value or 0 for value in values]
        bars = axes.bar(positions, heights, width, label=label)
        axes.bar_label(bars, labels=[f"{value:g}" if value else "" for value in values], fontsize=7, padding=2)
    axes.set_xticks(range(len(systems)), systems, fontsize=8)
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=10)
    if log:
        axes.set_yscale("log")
    axes.legend(fontsize=8)
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return path


def compare_plots(figures: dict[str, Any], out: Path) -> list[Path]:
    """Window reads by history length, and appends by clients: the p50 of each system."""
    rows = figures["figures"]
    reads = _grouped_bars(
        systems=READ_SYSTEMS,
        series={
            f"{size:,} messages stored": [
                _figure(rows, system=system, operation="window read", size=size, clients=1) for system in READ_SYSTEMS
            ]
            for size in (100, 10_000)
        },
        ylabel="p50 latency, ms (log scale)",
        title="Reading the newest 50 messages, 1 client, in process",
        path=out / "compare-window-reads.png",
        log=True,
    )
    appends = _grouped_bars(
        systems=APPEND_SYSTEMS,
        series={
            f"{clients} client{'s' if clients > 1 else ''}": [
                _figure(rows, system=system, operation="append", size=100, clients=clients) for system in APPEND_SYSTEMS
            ]
            for clients in (1, 16)
        },
        ylabel="p50 latency, ms (log scale)",
        title="Appending one message, in process (the service's append is broker-confirmed)",
        path=out / "compare-appends.png",
        log=True,
    )
    return [reads, appends]


def retrieval_plot(figures: dict[str, Any], out: Path) -> Path:
    """Recall of the answer turns at each k, one bar per search method, the reference as a line."""
    methods = figures["methods"]
    ks = [str(k) for k in figures.get("ks", [8, 20])]
    names = [method["name"] for method in methods]
    figure, axes = plt.subplots(figsize=(8, 0.45 * len(names) + 2.2))
    height = 0.8 / len(ks)
    for index, k in enumerate(ks):
        positions = [number + (index - (len(ks) - 1) / 2) * height for number in range(len(names))]
        values = [method["recall"].get(k) or 0 for method in methods]
        bars = axes.barh(positions, values, height, label=f"recall@{k}")
        axes.bar_label(bars, labels=[f"{value:.3f}" for value in values], fontsize=7, padding=2)
    reference = figures.get("reference")
    if reference:
        for index, k in enumerate(ks):
            value = reference["recall"].get(k)
            if value is not None:
                axes.axvline(value, color=f"C{index}", linestyle="--", linewidth=1, label=f"{reference['name']}, @{k}")
    axes.set_yticks(range(len(names)), names, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlim(0, 1)
    axes.set_xlabel("recall of the answer turns in the top k")
    questions = figures.get("questions")
    axes.set_title(f"User search, {figures.get('dataset', '')} dataset, {questions} questions", fontsize=10)
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2)
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    path = out / "retrieval-recall.png"
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--compare", type=Path, default=FIGURES / "compare.json", help="python -m benchmarks.compare --json")
    parser.add_argument(
        "--retrieval", type=Path, default=FIGURES / "retrieval.json", help="python -m benchmarks.retrieval --json"
    )
    parser.add_argument("--out", type=Path, default=IMAGES, help="where the PNGs go")
    options = parser.parse_args(argv)
    options.out.mkdir(parents=True, exist_ok=True)
    drawn = compare_plots(json.loads(options.compare.read_text()), options.out)
    drawn.append(retrieval_plot(json.loads(options.retrieval.read_text()), options.out))
    for path in drawn:
        print(f"drew {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
