"""``python -m benchmarks.capacity.model``: the capacity model of docs/scaling.md, computed from the
measured costs (``benchmarks/figures/capacity.json``) for a stated load and mix.

Cores of a component = the sum over operations of (operations per second x CPU ms per operation / 1000);
machines = cores / (cores per machine x target utilisation). Redis runs commands on one thread, so a
Redis primary is counted as one core at the target utilisation. This is an extrapolation from
single-node measurements: it assumes cost per operation stays flat as the load grows (no contention,
no batching gains), which holds for the stateless processes and is optimistic for the engines.

Figures measured with an embedding server (``--embedding-server``) also give what that server must do:
the texts it embeds a second (each appended message embedded, and each search's query; a context read
with its defaults embeds none) and the cores it used for them on the benchmark's CPU, outside the
service's count. ``--figures`` takes several files and shows them side by side.

    .venv/bin/python -m benchmarks.capacity.model [--figures PATH [PATH ...]] [--appends 10000] [--context-reads 50000] ...
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from benchmarks.capacity.meters import COMPONENTS

FIGURES = Path(__file__).resolve().parents[1] / "figures" / "capacity.json"
ROUND_TRIPS = ("sql statements/s", "redis commands/s", "redis script calls/s", "broker messages/s")


def operation_rates(options: argparse.Namespace) -> dict[str, float]:
    """Operations per second of each measured kind for the load and mix in ``options``."""
    batch_of_ten = options.appends * options.batched_share
    messages = (options.appends - batch_of_ten) + 10 * batch_of_ten
    misses = options.context_reads * (1 - options.cache_hit_ratio)
    return {
        "append, batch of 1": options.appends - batch_of_ten,
        "append, batch of 10": batch_of_ten,
        "embedded message": messages * options.embedded_share,
        "context read": options.context_reads,
        # a context read that misses the cache also rebuilds the window: the cold read's extra cost
        "cold window read": misses,
        "window read (cache)": -misses,
        "search (hybrid)": options.context_reads * options.search_share,
    }


def model(figures: list[dict], rates: dict[str, float]) -> dict[str, float]:
    """Cores of each component, round trips per second of each engine, and the cores of processes
    outside the service (``cpu_ms_outside``: the embedding server), apart."""
    rows = {row["operation"]: row for row in figures}
    # a message embedded: the costlier of the two ways measured (a task per message, or a conversation's batch)
    rows["embedded message"] = max(
        (row for row in figures if row["operation"].startswith("embedded message")), key=lambda row: row["cpu_ms_total"]
    )
    totals = dict.fromkeys([*COMPONENTS, *ROUND_TRIPS], 0.0)
    for operation, rate in rates.items():
        row = rows[operation]
        for component in COMPONENTS:
            totals[component] += rate * row["cpu_ms"][component] / 1000
        for outside, cpu_ms in row.get("cpu_ms_outside", {}).items():
            totals[outside] = totals.get(outside, 0.0) + rate * cpu_ms / 1000
        totals["sql statements/s"] += rate * row["sql_statements"]
        totals["redis commands/s"] += rate * row["redis_commands"]
        totals["redis script calls/s"] += rate * row["redis_scripts"]
        totals["broker messages/s"] += rate * row["broker"]["published"]
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.capacity.model", description=__doc__.split("\n\n")[0])
    parser.add_argument("--figures", type=Path, nargs="+", default=[FIGURES], help="figures files, side by side")
    parser.add_argument("--appends", type=float, default=10_000, help="append requests per second")
    parser.add_argument("--batched-share", type=float, default=0.2, help="share of appends that carry 10 messages (the rest 1)")
    parser.add_argument("--context-reads", type=float, default=50_000, help="context reads per second")
    parser.add_argument("--cache-hit-ratio", type=float, default=0.95, help="context reads answered from the cached window")
    parser.add_argument("--search-share", type=float, default=0.05, help="searches per context read")
    parser.add_argument("--embedded-share", type=float, default=1.0, help="share of appended messages embedded")
    parser.add_argument("--cores-per-machine", type=int, default=16)
    parser.add_argument("--utilisation", type=float, default=0.6, help="target CPU utilisation (headroom for peaks and failover)")
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    reports = {path.stem: json.loads(path.read_text()) for path in options.figures}
    rates = operation_rates(options)
    totals = {name: model(report["figures"], rates) for name, report in reports.items()}
    for name, report in reports.items():
        embedding = report.get("settings", {}).get("embedding", "in process")
        print(
            f"{name}: costs measured {report['date']} on {report['machine']['cpu']} ({report['machine']['cores']} cores), embedding {embedding}."
        )
    print("\n| operation | per second |\n|---|---:|")
    for operation, rate in rates.items():
        print(f"| {operation} | {rate:,.0f} |")
    print("\nA context read that misses the cache costs a cold window read in place of a cached one: hence the negative rate.")
    usable = options.cores_per_machine * options.utilisation
    machines = f"machines of {options.cores_per_machine} cores at {options.utilisation:.0%}"
    labels = [f" ({name})" if len(reports) > 1 else "" for name in reports]
    print("\n| component |" + "".join(f" cores{label} | {machines}{label} |" for label in labels))
    print("|---|" + "---:|---:|" * len(reports))
    for component in COMPONENTS:
        cells = []
        for each in totals.values():
            cores = each[component]
            if component == "redis":  # one thread runs the commands: a primary per core at the target utilisation
                cells += [f"{cores:,.1f}", f"{math.ceil(cores / options.utilisation)} primaries (one thread each)"]
            else:
                cells += [f"{cores:,.1f}", f"{math.ceil(cores / usable)}"]
        print(f"| {component} | " + " | ".join(cells) + " |")
    everything = [sum(each[component] for component in COMPONENTS) for each in totals.values()]
    print("| all | " + " | ".join(f"{cores:,.1f} | {math.ceil(cores / usable)}" for cores in everything) + " |")
    print("\n| engine round trips |" + "".join(f" per second{label} |" for label in labels))
    print("|---|" + "---:|" * len(reports))
    for name in ROUND_TRIPS:
        print(f"| {name} | " + " | ".join(f"{each[name]:,.0f}" for each in totals.values()) + " |")
    texts = rates["embedded message"] + rates["search (hybrid)"]
    for name, each in totals.items():
        for outside in sorted(set(each) - set(COMPONENTS) - set(ROUND_TRIPS)):
            print(
                f"\n{name}: the {outside}, outside the service, embeds {texts:,.0f} texts a second "
                f"({rates['embedded message']:,.0f} messages, {rates['search (hybrid)']:,.0f} search queries); on the "
                f"measured CPU that took {each[outside]:,.1f} cores ({math.ceil(each[outside] / usable)} {machines}), "
                "not counted above."
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
