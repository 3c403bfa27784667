"""The benchmark database: created when missing, and only ever one whose name says it is for benchmarks."""

import os

import psycopg
from django.conf import settings
from psycopg import sql


def standalone_setup(*, embedding_model: str | None = "") -> None:
    """What a benchmark run on its own does first: refuse to start without its own database, Redis
    database and queue in the environment, set Django up with the test settings (``embedding_model``
    unless the environment names one; None leaves the settings' default), then create and migrate the
    database."""
    missing = [name for name in ("DATABASE_URL", "REDIS_URL", "MEMORY_QUEUE") if not os.environ.get(name)]
    if missing:
        raise SystemExit(f"Set {', '.join(missing)} to the benchmark's own database, Redis database and queue.")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test")
    if embedding_model is not None:
        os.environ.setdefault("MEMORY_EMBEDDING_MODEL", embedding_model)

    import django

    django.setup()
    from django.core.management import call_command

    ensure_database()
    call_command("migrate", verbosity=0, interactive=False)


def ensure_database() -> None:
    database = settings.DATABASES["default"]
    if "bench" not in database["NAME"]:
        raise SystemExit(f"Refusing to use {database['NAME']!r}: point DATABASE_URL at a benchmark database.")
    params = {"host": database["HOST"], "port": database["PORT"], "user": database["USER"], "password": database["PASSWORD"]}
    with psycopg.connect(dbname="postgres", autocommit=True, **{k: v for k, v in params.items() if v}) as server:
        if server.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database["NAME"]]).fetchone() is None:
            server.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database["NAME"])))
