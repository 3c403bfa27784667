"""The benchmark database: created when missing, and only ever one whose name says it is for benchmarks."""

import psycopg
from django.conf import settings
from psycopg import sql


def ensure_database() -> None:
    database = settings.DATABASES["default"]
    if "bench" not in database["NAME"]:
        raise SystemExit(f"Refusing to use {database['NAME']!r}: point DATABASE_URL at a benchmark database.")
    params = {"host": database["HOST"], "port": database["PORT"], "user": database["USER"], "password": database["PASSWORD"]}
    with psycopg.connect(dbname="postgres", autocommit=True, **{k: v for k, v in params.items() if v}) as server:
        if server.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database["NAME"]]).fetchone() is None:
            server.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database["NAME"])))
