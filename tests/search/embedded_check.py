"""Run by ``test_embedded_postgres``, in a process of its own whose settings point at the embedded
PostgreSQL: vectors are written and all three search modes answer there too. Prints JSON."""

import json

import django


def main() -> None:
    django.setup()
    from django.db import connection

    from search import selectors
    from tenants.models import Tenant
    from tests.search.test_search import conversation_of_facts

    tenant = Tenant.objects.create(slug="embedded-check", name="Embedded check")
    conversation_of_facts(tenant)
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        version = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'vector'")
        pgvector = bool(cursor.fetchone()[0])
    top = {}
    for mode, query in (
        ("semantic", "What kind of dog does Caroline have?"),
        ("keyword", "88341"),
        ("hybrid", "Where did Tomasz move?"),
    ):
        result = selectors.memory_search(
            tenant=tenant, request=selectors.SearchRequest.for_tenant(tenant, query=query, mode=mode), conversation_id="s1"
        )
        top[mode] = result.hits[0].content if result.hits else None
    print(json.dumps({"server_version": version, "pgvector_available": pgvector, "top": top}))


if __name__ == "__main__":
    main()
