"""Fixtures of the TypeScript client's tests: the live service of the Python client's tests (a real
gunicorn and Celery worker on the run's test database, Redis database and queue), reused as is."""

from tests.client.conftest import service, small_batch_web, small_page_web, web, web_servers  # noqa: F401 (fixtures)
