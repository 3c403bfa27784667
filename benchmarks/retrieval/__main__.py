"""``python -m benchmarks.retrieval``: the retrieval evaluation against a benchmark database.

    DJANGO_SETTINGS_MODULE=memoryproject.settings.test DATABASE_URL=postgres://postgres@127.0.0.1:5432/membench \\
    REDIS_URL=redis://127.0.0.1:6379/13 MEMORY_QUEUE=memory-bench .venv/bin/python -m benchmarks.retrieval \\
    [--dataset synthetic|locomo] [--users N] [--questions-per-user N] [--k 8,20] [--context-tokens 4000] [--json PATH]

Creates the database if it is missing (its name must contain ``bench``), migrates it, stores the
dataset in the tenant ``retrieval-eval`` (once: later runs find it stored), embeds it and prints the
tables. See benchmarks/README.md.
"""
# ruff: noqa: E402 (the models can only be imported after django.setup())

import argparse
import json
import os
import sys
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/membench")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/13")
os.environ.setdefault("MEMORY_QUEUE", "memory-bench")
django.setup()

from django.core.management import call_command

from benchmarks.database import ensure_database
from benchmarks.retrieval import locomo
from benchmarks.retrieval.dataset import Dataset, dataset_generate
from benchmarks.retrieval.evaluate import TENANT_SLUG, evaluation_run, report_json, report_markdown
from tenants import services as tenant_services
from tenants.models import Tenant


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.retrieval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", choices=("synthetic", "locomo"), default="synthetic")
    parser.add_argument("--users", type=int, default=None, help="the first N users (synthetic: 10 unless given)")
    parser.add_argument("--questions-per-user", type=int, default=None, help="a fixed sample of N questions per user")
    parser.add_argument("--k", default="8,20", help="comma-separated cut-offs (default 8,20)")
    parser.add_argument("--seed", type=int, default=1, help="synthetic: the generator's seed")
    parser.add_argument("--locomo-path", type=Path, default=None, help=f"locomo: the file (default: {locomo.DEFAULT_HINT})")
    parser.add_argument(
        "--context-tokens",
        type=int,
        default=4000,
        help="max_tokens of the context asked for each question with use_memory (0: not asked; default 4000)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    options = parser.parse_args(argv)
    try:
        options.ks = tuple(int(k) for k in options.k.split(","))
    except ValueError:
        parser.error(f"--k takes comma-separated numbers, not {options.k!r}")
    if options.context_tokens < 0:
        parser.error("--context-tokens must not be negative")
    if any(k < 1 for k in options.ks) or (options.users is not None and options.users < 1):
        parser.error("--k and --users must be positive")
    return options


def load(options: argparse.Namespace) -> Dataset:
    if options.dataset == "locomo":
        try:
            dataset = locomo.locomo_load(path=options.locomo_path)
        except locomo.LocomoMissing as error:
            raise SystemExit(str(error)) from None
        return Dataset(dataset.name, dataset.users[: options.users]) if options.users else dataset
    return dataset_generate(users=options.users or 10, seed=options.seed)


def main(argv: list[str]) -> None:
    options = arguments(argv)
    dataset = load(options)
    ensure_database()
    call_command("migrate", verbosity=0, interactive=False)
    tenant = Tenant.objects.filter(slug=TENANT_SLUG).first() or tenant_services.tenant_create(slug=TENANT_SLUG)
    report = evaluation_run(
        dataset=dataset,
        tenant=tenant,
        ks=options.ks,
        questions_per_user=options.questions_per_user,
        context_tokens=options.context_tokens,
    )
    print(report_markdown(report))
    if options.json:
        options.json.write_text(json.dumps(report_json(report), indent=2, default=str))
        print(f"\nFigures written to {options.json}.")


if __name__ == "__main__":
    main(sys.argv[1:])
