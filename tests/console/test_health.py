"""The health page (``admin/health/``) by role and in degraded states, its panel, the workers'
heartbeats and the sampler, against the real PostgreSQL, Redis, RabbitMQ and Celery workers.

An engine is made unreachable as the probes' tests do it (``tests/test_health.py``): its setting
pointed at a port where nothing listens, so it is refused at once.
"""

import re
from collections.abc import Iterator
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from console import figures as console_figures
from console import selectors as console_selectors
from console import services, tasks
from console.models import HealthSample, WorkerHeartbeat
from conversations.models import CacheRepair, DeadLetter
from conversations.selectors import broker_status
from memoryproject import health
from memoryproject.celery import app as celery_app
from tests.conversations.test_api import redis_unreachable
from tests.factories import message_payload
from tests.faults import free_port, wait_until

PAGE = "/admin/health/"
PANEL = "/admin/health/panel/"
SCRAPER = {"HTTP_AUTHORIZATION": "Bearer test-metrics-token"}


@pytest.fixture(autouse=True)
def fresh_checks() -> Iterator[None]:
    """Each test runs its own round of readiness checks (one round answers for a second)."""
    health.forget()
    yield
    health.forget()


@pytest.fixture
def superuser_client(db: Any) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser(username="root", password="a-long-password-1"))
    return client


@pytest.fixture
def broker_down(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(celery_app.conf, "broker_url", f"amqp://guest:guest@127.0.0.1:{free_port()}//")


def page_text(answer: Any) -> str:
    assert answer.status_code == 200, answer.content[:500]
    return answer.content.decode()


def words(html: str) -> str:
    """The page's text as read, tags out and spaces folded."""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def samples_a_minute_apart(count: int = 3) -> list[HealthSample]:
    """``count`` samples taken now, dated one sampler interval apart, the last one now."""
    taken = [services.health_sample_take() for _ in range(count)]
    now = timezone.now()
    for index, sample in enumerate(taken):
        sample.taken_at = now - timedelta(seconds=tasks.SAMPLE_SECONDS * (count - 1 - index))
        sample.save(update_fields=["taken_at"])
    return taken


def dead_letter(tenant: Any, conversation_id: str) -> DeadLetter:
    return DeadLetter.unscoped.create(
        tenant=tenant,
        task_name="conversations.tasks.messages_persist",
        payload={"tenant_slug": tenant.slug, "conversation_id": conversation_id},
        error="IntegrityError: a refused row",
    )


def read_window(api: Any, conversation_id: str, times: int) -> None:
    for _ in range(times):
        assert api.get(f"/api/v1/conversations/{conversation_id}/messages/").status_code == 200


# --- Who sees what ------------------------------------------------------------------------------------


def test_a_superuser_sees_every_engine_the_queues_the_workers_the_figures_and_the_charts(superuser_client, worker, tenant):
    wait_until(lambda: WorkerHeartbeat.objects.filter(hostname__startswith="main-").exists(), message="the worker's heartbeat")
    samples_a_minute_apart()

    html = page_text(superuser_client.get(PAGE))
    text = words(html)

    for engine in ("PostgreSQL", "Redis", "The broker"):
        assert f"{engine}" in text
    assert 'data-engine="database" data-ok="true"' in html
    assert 'data-engine="cache" data-ok="true"' in html
    assert 'data-engine="broker" data-ok="true"' in html
    assert settings.MEMORY_QUEUE in text
    assert settings.MEMORY_DERIVED_QUEUE in text
    assert 'data-queue="persist" data-served="true"' in html
    assert "consumed" in text
    assert "workers wait for the broker" not in text
    hostname = WorkerHeartbeat.objects.get(hostname__startswith="main-").hostname
    assert hostname in text
    assert 'data-missing="false"' in html
    for figure in (
        "Persist queue",
        "Derived queue",
        "Persist lag p50 / p99",
        "Cache hit rate",
        "Dead letters",
        "Embedding backlog",
    ):
        assert figure in text
    charts = re.findall(r'<polyline class="memory-chart__line" points="([^"]+)"', html)
    assert len(charts) >= 4  # queues, lag, dead letters... each drawn through the three samples
    assert all(len(points.split()) >= 2 for points in charts)
    assert "The whole deployment" in text
    assert 'href="/admin/health/"' in html  # the link in the header of every admin page


def test_a_tenants_operator_sees_its_own_figures_and_nothing_of_another_tenant(
    operator_client, api, other_api, tenant, other_tenant, worker
):
    api.post("/api/v1/conversations/c1/messages/", message_payload(), format="json")
    other_api.post("/api/v1/conversations/g1/messages/", message_payload(), format="json")
    for number in range(2):
        dead_letter(tenant, f"c{number}")
    for number in range(7):
        dead_letter(other_tenant, f"g{number}")
    for number in range(5):
        CacheRepair.objects.for_tenant(other_tenant).create(tenant=other_tenant, conversation_id=f"g{number}")
    services.health_sample_take()
    read_window(other_api, "g1", 6)  # globex's lookups, between two samples
    samples_a_minute_apart(2)

    html = page_text(operator_client.get(PAGE))
    text = words(html)

    assert "Tenant acme only" in text
    assert "globex" not in html
    assert "Dead letters waiting: latest 2" in html  # acme's own, not the 9 of both tenants
    assert "Dead letters waiting: latest 9" not in html
    assert "Awaiting cache repair: latest 0" in html  # globex's 5 repairs are not acme's
    assert "Cache hit rate: no data" in html  # globex's reads are not acme's lookups
    figures = {figure.label: figure.value for figure in operator_client.get(PAGE).context["report"].figures}
    assert figures["Dead letters"] == "2"
    assert figures["Awaiting cache repair"] == "0"
    # Nothing that adds tenants up, and nothing of the deployment's internals.
    for deployment_only in ("Persist queue", "Persist lag", "Derived queue", settings.MEMORY_QUEUE, "main-", "Error"):
        assert deployment_only not in text, deployment_only
    assert 'data-engine="cache" data-ok="true"' in html
    assert 'data-queue="persist" data-served="true"' in html


def test_a_tenants_operator_never_reads_another_tenants_part_of_a_sample(operator_client, tenant, other_tenant, worker):
    dead_letter(other_tenant, "g1")
    samples_a_minute_apart(2)

    report = operator_client.get(PANEL).context["report"]

    assert report.tenant == "acme"
    assert all("globex" not in str(chart) for chart in report.charts)
    assert report.workers == []
    assert all(queue.depth is None for queue in report.queues)
    assert all(engine.error == "" for engine in report.engines)


def test_a_staff_user_bound_to_no_tenant_sees_the_engines_and_no_figure(client, db, worker):
    staff = get_user_model().objects.create_user(username="loose", password="a-long-password-1", is_staff=True)
    client.force_login(staff)
    samples_a_minute_apart(2)

    html = page_text(client.get(PAGE))

    assert "bound to no tenant" in words(html)
    assert 'data-engine="database" data-ok="true"' in html
    assert "memory-chart" not in html
    assert "Dead letters" not in html


@pytest.mark.parametrize("path", [PAGE, PANEL])
def test_a_user_who_is_not_staff_is_sent_to_the_login_page(client, db, path):
    client.force_login(get_user_model().objects.create_user(username="customer", password="a-long-password-1"))

    answer = client.get(path)

    assert answer.status_code == 302
    assert answer["Location"].startswith("/admin/login/?next=")
    assert Client().get(path)["Location"].startswith("/admin/login/")  # nor anyone signed out


# --- Degraded states, in words, with what to do -----------------------------------------------------


def test_with_redis_unreachable_the_page_renders_and_names_redis_down_with_what_to_do(superuser_client, tenant, worker):
    CacheRepair.objects.for_tenant(tenant).create(tenant=tenant, conversation_id="c1")

    with redis_unreachable():
        answer = superuser_client.get(PAGE)
        panel = superuser_client.get(PANEL)

    text = words(page_text(answer))
    assert 'data-engine="cache" data-ok="false"' in answer.content.decode()
    assert "The service is degraded: writes are still accepted durably" in text
    # The readiness decision's own words, then what to do.
    assert "Redis (REDIS_URL) does not answer: writes are committed to PostgreSQL in the request" in text
    assert "Start Redis or restore this process's route to it" in text
    assert "(1 so far) are repaired by the sweep" in text
    assert "127.0.0.1:1" in text  # a superuser reads the error text
    assert 'data-engine="cache" data-ok="false"' in page_text(panel)


def test_a_tenants_operator_learns_redis_is_down_but_not_the_error_text(operator_client, tenant, worker):
    with redis_unreachable():
        html = page_text(operator_client.get(PAGE))

    assert 'data-engine="cache" data-ok="false"' in html
    assert "Only your deployment's operators can bring it back" in words(html)  # not "Start Redis": not theirs to do
    assert "Start Redis" not in words(html)
    assert "metrics token" not in words(html)  # the headline's reason, without the advice only the deployment can follow
    assert "127.0.0.1" not in html


def connected_heartbeat() -> WorkerHeartbeat:
    """The test worker's heartbeat once it says its consumer holds a broker connection (its first beat
    may come before it connected)."""
    wait_until(
        lambda: WorkerHeartbeat.objects.filter(hostname__startswith="main-", broker_connected=True).exists(),
        timeout=30,
        message="a heartbeat of the worker connected to the broker",
    )
    return WorkerHeartbeat.objects.get(hostname__startswith="main-")


def test_with_the_broker_down_the_page_says_no_write_can_be_accepted(superuser_client, worker, broker_down):
    connected_heartbeat()

    html = page_text(superuser_client.get(PAGE))
    text = words(html)

    assert 'data-engine="broker" data-ok="false"' in html
    assert "The service is unavailable: no write can be accepted" in text
    assert "the broker (CELERY_BROKER_URL) does not answer: no write can be accepted" in text
    assert "Start the broker" in text
    # No consumer count from the broker this process cannot reach: the worker's heartbeat says it is
    # connected to it, so the persist queue is consumed (by the heartbeats' word), not waited for.
    assert 'data-queue="persist" data-served="true"' in html
    assert "workers wait for the broker" not in text
    assert "consumed" in text


def test_with_the_broker_down_workers_that_say_they_are_connecting_wait_for_it(superuser_client, no_worker, broker_down):
    services.heartbeat_record(
        hostname="write-1@host", pid=4242, queues=[settings.MEMORY_QUEUE], started_at=timezone.now(), broker_connected=False
    )

    html = page_text(superuser_client.get(PAGE))

    assert 'data-queue="persist" data-served="true"' in html
    assert "workers wait for the broker" in words(html)  # alive, but nothing is consumed while it is down
    assert 'data-state="connecting"' in html


def test_no_worker_on_the_persist_queue_is_named_with_the_command_to_start_one(superuser_client, no_worker):
    text = words(page_text(superuser_client.get(PAGE)))

    assert f"No worker consumes {settings.MEMORY_QUEUE}: acknowledged writes wait in the queue" in text
    assert f"celery -A memoryproject worker -Q {settings.MEMORY_QUEUE} -n write-$$@%h --pool threads" in text


def test_a_worker_killed_without_a_word_is_missing_once_its_heartbeat_is_stale(superuser_client, worker):
    wait_until(lambda: WorkerHeartbeat.objects.filter(hostname__startswith="main-").exists(), message="the worker's heartbeat")
    worker.kill()
    heartbeat = WorkerHeartbeat.objects.get(hostname__startswith="main-")
    assert 'data-missing="false"' in page_text(superuser_client.get(PAGE))  # heard from within three beats

    WorkerHeartbeat.objects.filter(pk=heartbeat.pk).update(seen_at=timezone.now() - timedelta(seconds=45))  # 4 beats on
    html = page_text(superuser_client.get(PAGE))

    assert 'data-missing="true"' in html
    assert f"Worker {heartbeat.hostname} (pid {heartbeat.pid}, {settings.MEMORY_QUEUE}) was last heard from 45 s ago" in words(
        html
    )


def test_a_worker_that_stops_cleanly_takes_its_heartbeat_with_it(worker):
    wait_until(lambda: WorkerHeartbeat.objects.filter(hostname__startswith="main-").exists(), message="the worker's heartbeat")
    heartbeat = WorkerHeartbeat.objects.get(hostname__startswith="main-")
    assert heartbeat.queues == [settings.MEMORY_QUEUE]

    worker.stop()

    assert not WorkerHeartbeat.objects.filter(hostname__startswith="main-").exists()


def test_a_sampler_that_stopped_is_named_with_when_it_last_ran(superuser_client, worker):
    sample = services.health_sample_take()
    HealthSample.objects.filter(pk=sample.pk).update(taken_at=timezone.now() - timedelta(minutes=6))

    text = words(page_text(superuser_client.get(PAGE)))

    assert "No sample since" in text
    assert "(6 min ago)" in text
    assert "celery -A memoryproject beat" in text


def test_dead_letters_waiting_link_to_their_list(superuser_client, tenant, worker):
    dead_letter(tenant, "c1")
    dead_letter(tenant, "c2")

    html = page_text(superuser_client.get(PAGE))

    assert "2 dead letters wait for a replay" in words(html)
    assert 'href="/admin/conversations/deadletter/?replayed_at__isempty=1"' in html


# --- The panel ------------------------------------------------------------------------------------------


def test_the_panel_answers_alone_never_cached_and_shows_what_changed(superuser_client, tenant, worker):
    first = superuser_client.get(PANEL)
    dead_letter(tenant, "c1")
    second = superuser_client.get(PANEL)

    assert first["X-Health-Panel"] == "1"
    assert "no-cache" in first["Cache-Control"]
    assert "<html" not in page_text(first)
    assert "memory-health__panel" in page_text(first)
    assert "1 dead letter waits" not in words(page_text(first))
    assert "1 dead letter waits for a replay" in words(page_text(second))


# --- The heartbeats and the samples -------------------------------------------------------------------


def test_the_sampler_writes_the_figures_of_metrics(client, api, other_api, tenant, other_tenant, no_worker):
    api.post("/api/v1/conversations/c1/messages/", message_payload(), format="json")
    other_api.post("/api/v1/conversations/g1/messages/", message_payload(), format="json")
    read_window(api, "c1", 3)
    read_window(other_api, "g1", 2)
    dead_letter(tenant, "c1")

    sample = HealthSample.objects.get(pk=tasks.health_sample.apply().get())
    scraped = {
        (sample_.name, tuple(sorted(sample_.labels.items()))): sample_.value
        for family in text_string_to_metric_families(client.get("/metrics", **SCRAPER).content.decode())
        for sample_ in family.samples
    }

    figures = sample.figures
    for slug in ("acme", "globex"):
        for result in ("hit", "miss"):
            expected = sum(
                value
                for (name, labels), value in scraped.items()
                if name == "memory_cache_requests_total"
                and dict(labels)["tenant"] == slug
                and dict(labels)["result"] == result
                and dict(labels)["data_type"] != "context"
            )
            assert figures["tenants"][slug]["cache"][result] == expected, (slug, result)
        assert (
            figures["tenants"][slug]["embedding"]["backlog"]
            == scraped[("memory_embedding_backlog_messages", (("tenant", slug),))]
        )
    assert figures["queues"]["persist"]["depth"] == scraped[("memory_queue_depth", ())] == 2
    assert figures["queues"]["derived"]["depth"] == scraped[("memory_derived_queue_depth", ())]
    assert figures["queues"]["persist"]["consumers"] == 0
    lag_count = scraped[("memory_persist_lag_seconds_count", ())]
    assert figures["persist_lag"]["buckets"][-1] == [None, lag_count]
    assert figures["dead_letters"]["waiting"] == 1
    assert figures["tenants"]["acme"]["dead_letters"] == {"waiting": 1}


def test_the_beat_schedule_runs_the_sampler_on_a_worker_of_the_persist_queue(worker):
    entry = settings.CELERY_BEAT_SCHEDULE["health-sample"]
    assert entry["task"] in celery_app.tasks
    assert entry["schedule"] == tasks.SAMPLE_SECONDS
    assert entry["options"]["expires"] < tasks.SAMPLE_SECONDS

    celery_app.send_task(entry["task"], **entry["options"])

    wait_until(HealthSample.objects.exists, message="a sample taken by the worker")
    assert HealthSample.objects.get().figures["queues"]["persist"]["consumers"] == 1


def test_samples_and_heartbeats_older_than_a_day_are_pruned(db):
    old = services.health_sample_take()
    HealthSample.objects.filter(pk=old.pk).update(taken_at=timezone.now() - timedelta(days=1, minutes=1))
    services.heartbeat_record(hostname="gone@host", pid=1, queues=["q"], started_at=timezone.now())
    WorkerHeartbeat.objects.filter(hostname="gone@host").update(seen_at=timezone.now() - timedelta(days=2))

    kept = services.health_sample_take()

    assert list(HealthSample.objects.values_list("pk", flat=True)) == [kept.pk]
    assert not WorkerHeartbeat.objects.exists()


def test_the_lag_quantiles_are_read_from_the_histogram_as_prometheus_does():
    # 100 writes: 50 under 10 ms, 40 more under 100 ms, 9 under 1 s, 1 over 60 s.
    buckets = [[0.01, 50], [0.1, 90], [1.0, 99], [60.0, 99], [None, 100]]

    assert console_figures.quantile(0.5, buckets) == pytest.approx(0.01)
    assert console_figures.quantile(0.9, buckets) == pytest.approx(0.1)
    assert console_figures.quantile(0.95, buckets) == pytest.approx(0.1 + 0.9 * 5 / 9)
    assert console_figures.quantile(0.999, buckets) == 60.0  # past the last bound: that bound
    assert console_figures.quantile(0.5, [[0.01, 0], [None, 0]]) is None


def test_an_interval_across_a_counter_reset_tells_nothing():
    earlier = {"source": {"process": "h:1"}, "cache": {"hit": 9, "miss": 1, "error": 0}, "persist_lag": {"buckets": [[None, 5]]}}
    later = {"source": {"process": "h:1"}, "cache": {"hit": 2, "miss": 0, "error": 0}, "persist_lag": {"buckets": [[None, 1]]}}
    elsewhere = {**later, "source": {"process": "h:2"}}

    assert console_figures.interval_figures(later, earlier)["hit_rate"] is None
    assert console_figures.interval_figures(later, earlier)["lag_p99"] is None
    assert console_figures.interval_figures(elsewhere, earlier)["persisted"] is None


def test_a_backlog_younger_than_a_second_and_samples_taken_together_read_as_words():
    taken = datetime(2026, 11, 29, 5, 32, 16, tzinfo=UTC)
    figures = {
        "source": {"process": "web:1"},
        "persist_lag": {"buckets": [], "sum": 0.0},
        "cache": {"hit": 0, "miss": 0, "error": 0},
        "embedding": {"backlog": 4, "lag_seconds": 0.4},
    }
    samples = [{"taken_at": taken, "figures": figures}, {"taken_at": taken, "figures": figures}]

    paired = console_selectors._with_intervals(samples, slug=None)
    shown = {figure.label: figure for figure in console_selectors._figures(paired, {}, broker=None, slug=None)}

    assert shown["Embedding backlog"].value == "4"
    assert shown["Embedding backlog"].detail == "the oldest waiting for 0 s"
    assert shown["Cache hit rate"].detail.startswith("no lookup over the last interval to 05:32:16 UTC")


# --- The headline is /readyz's decision, word for word ---------------------------------------------------


def headline(html: str) -> tuple[str, str]:
    """The headline's decision word (as /readyz says it) and its text as read."""
    match = re.search(r'<h2 class="memory-health__decision" data-status="([a-z]+)">(.*?)</h2>', html, re.S)
    assert match, html[:2000]
    return match.group(1), words(match.group(2)).strip()


@pytest.mark.parametrize("state", ["ready", "degraded", "unavailable"])
def test_the_headline_says_the_word_readyz_says_and_the_superuser_reads_its_message_whole(
    superuser_client, client, worker, state, monkeypatch
):
    if state == "unavailable":
        monkeypatch.setattr(celery_app.conf, "broker_url", f"amqp://guest:guest@127.0.0.1:{free_port()}//")
    with redis_unreachable() if state == "degraded" else nullcontext():
        probe = client.get("/readyz").json()
        html = page_text(superuser_client.get(PAGE))

    word, text = headline(html)
    assert probe["status"] == state
    assert word == state
    assert text.startswith(f"The service is {state}: ")
    assert words(probe.get("message", "")).strip() in words(html)  # the message, word for word


def test_a_tenants_operator_reads_the_decision_word_and_its_reason_without_the_metrics_token(operator_client, client, worker):
    with redis_unreachable():
        probe = client.get("/readyz").json()
        html = page_text(operator_client.get(PAGE))

    word, _ = headline(html)
    assert word == probe["status"] == "degraded"
    reason = probe["message"].split(" Check that ")[0]
    assert reason in words(html)
    assert "metrics token" not in html


# --- A worker killed is said gone, not reconnecting ------------------------------------------------------


def test_a_worker_killed_is_said_not_heard_from_since_never_reconnecting(superuser_client, operator_client, worker):
    heartbeat = connected_heartbeat()
    worker.kill()
    wait_until(lambda: broker_status()["consumers"] == 0, message="the broker counting no consumer")

    html = page_text(superuser_client.get(PAGE))  # within the 30 s before the heartbeat is stale
    text = words(html)
    tenant_text = words(page_text(operator_client.get(PAGE)))

    assert 'data-missing="false"' in html  # not yet missing by its heartbeat
    assert 'data-state="left"' in html
    assert "not heard from since" in text
    assert f"No worker consumes {settings.MEMORY_QUEUE}: acknowledged writes wait in the queue" in text
    assert f"{heartbeat.hostname} (pid {heartbeat.pid}) said it was consuming it when last heard from" in text
    assert "stopped without a word (killed, out of memory, its host gone)" in text
    for said in (text, tenant_text):
        assert "reconnecting" not in said
        assert "connecting to the broker" not in said
    assert "Its worker said it was consuming it when last heard from" in tenant_text
    assert heartbeat.hostname not in tenant_text


def test_a_worker_that_says_it_is_connecting_is_said_connecting(superuser_client, no_worker):
    services.heartbeat_record(
        hostname="write-1@host", pid=4242, queues=[settings.MEMORY_QUEUE], started_at=timezone.now(), broker_connected=False
    )

    text = words(page_text(superuser_client.get(PAGE)))

    assert f"No consumer on {settings.MEMORY_QUEUE} at the broker: 1 worker of it says it is connecting to the broker" in text
    assert "connecting to the broker" in text


# --- Figures: the same value as their chart, and why when there is none -----------------------------------


def sample_figures(*, hit: int, miss: int, process: str = "web:1", multiprocess: bool = True) -> dict[str, Any]:
    return {
        "source": {"process": process, "multiprocess": multiprocess, "counted": True},
        "queues": None,
        "persist_lag": {"buckets": [[0.01, 5], [None, 5]], "sum": 0.02},
        "cache": {"hit": hit, "miss": miss, "error": 0},
        "fallbacks": {},
        "dead_letters": {"recorded": 0, "waiting": 0},
        "embedding": {"backlog": 0, "lag_seconds": 0.0},
        "cache_repairs": 0,
        "tenants": {"acme": {"cache": {"hit": hit, "miss": miss, "error": 0}}},
    }


def samples_of(*figures: dict[str, Any]) -> None:
    """Samples of these figures, one sampler interval apart, the last one now."""
    now = timezone.now()
    for index, each in enumerate(figures):
        HealthSample.objects.create(
            taken_at=now - timedelta(seconds=tasks.SAMPLE_SECONDS * (len(figures) - 1 - index)), figures=each
        )


def test_a_figure_shows_the_value_its_chart_is_captioned_with_and_when(superuser_client, worker):
    # 8 lookups, 6 hits, in the first interval; none in the second.
    samples_of(sample_figures(hit=0, miss=0), sample_figures(hit=6, miss=2), sample_figures(hit=6, miss=2))

    report = superuser_client.get(PANEL).context["report"]

    figure = next(figure for figure in report.figures if figure.label == "Cache hit rate")
    chart = next(str(chart) for chart in report.charts if "Cache hit rate" in str(chart))
    assert figure.value == "75 %"
    assert '<strong class="memory-chart__value">75 %</strong>' in chart
    assert figure.detail.startswith("8 lookups over the 30 s to ")
    assert figure.detail.endswith("; no lookup since")
    lag = next(figure for figure in report.figures if figure.label == "Persist lag p50 / p99")
    assert lag.value != "no data / no data"


def sample_taken_by_the_worker() -> HealthSample:
    """A sample taken as beat has it taken: by the sampler task, on a worker of the persist queue."""
    entry = settings.CELERY_BEAT_SCHEDULE["health-sample"]
    taken = HealthSample.objects.count()
    celery_app.send_task(entry["task"], **entry["options"])
    wait_until(lambda: HealthSample.objects.count() > taken, message="a sample taken by the worker")
    return HealthSample.objects.order_by("-taken_at").first()


def test_with_the_processes_counting_apart_the_hit_rate_says_why_it_has_no_data_and_what_to_set(
    superuser_client, operator_client, api, worker
):
    """As a deployment runs the Procfile: the web process serves the reads, a worker takes the samples,
    each counting in its own registry (no PROMETHEUS_MULTIPROC_DIR)."""
    api.post("/api/v1/conversations/c1/messages/", message_payload(), format="json")
    first = sample_taken_by_the_worker()
    read_window(api, "c1", 5)  # served here, counted in this process's registry only
    second = sample_taken_by_the_worker()
    HealthSample.objects.filter(pk=first.pk).update(taken_at=second.taken_at - timedelta(seconds=tasks.SAMPLE_SECONDS))

    superuser = superuser_client.get(PAGE)
    operator = operator_client.get(PAGE)

    for answer in (superuser, operator):
        rate = next(figure for figure in answer.context["report"].figures if figure.label == "Cache hit rate")
        assert rate.value == "no data"
        assert "in the process taking the samples, which counts its own only" in rate.detail
    assert "Set PROMETHEUS_MULTIPROC_DIR for every process of the host" in words(page_text(superuser))
    assert "Only your deployment's operators can set PROMETHEUS_MULTIPROC_DIR" in words(page_text(operator))
    assert "Set PROMETHEUS_MULTIPROC_DIR" not in words(page_text(operator))


# --- Each reader is told only what it can do -------------------------------------------------------------

# What only the deployment's operators can do: run a command, start or restart a process or an engine.
DEPLOYMENT_ONLY = ("manage.py", "celery -A", "Procfile", "make run", "Start ", "Set ", "restart", "metrics token")


def problems_said(answer: Any) -> list[str]:
    report = answer.context["report"]
    return [f"{problem.text} {problem.action} {problem.command} {problem.link_text}" for problem in report.problems] + [
        report.message
    ]


def test_a_tenants_operator_is_offered_the_dead_letters_list_and_its_replay_never_the_command(operator_client, tenant, worker):
    dead_letter(tenant, "c1")

    answer = operator_client.get(PAGE)
    text = words(page_text(answer))

    assert "1 dead letter waits for a replay" in text
    assert "replay it there (select it, then “Replay the selected dead letters”)" in text
    assert 'href="/admin/conversations/deadletter/?replayed_at__isempty=1"' in answer.content.decode()
    assert "replay_dead_letters" not in text


def test_an_operator_who_may_not_replay_is_told_whom_to_ask(operator_client, operator, tenant, worker):
    operator.groups.clear()
    operator.user_permissions.add(Permission.objects.get(codename="view_deadletter"))
    dead_letter(tenant, "c1")

    text = words(page_text(operator_client.get(PAGE)))

    assert "Read each one's error in the list. Only your deployment's operators can replay them" in text
    assert "Replay the selected dead letters" not in text
    assert "replay_dead_letters" not in text


@pytest.mark.parametrize("state", ["redis down", "broker down", "no worker", "dead letters", "vectors behind", "sampler stopped"])
def test_a_tenants_operator_is_never_told_to_do_what_only_the_deployment_can(
    operator_client, tenant, state, monkeypatch, request
):
    request.getfixturevalue("no_worker" if state == "no worker" else "worker")
    if state == "broker down":
        monkeypatch.setattr(celery_app.conf, "broker_url", f"amqp://guest:guest@127.0.0.1:{free_port()}//")
    if state == "dead letters":
        dead_letter(tenant, "c1")
    if state == "vectors behind":
        behind = sample_figures(hit=0, miss=0)
        behind["tenants"]["acme"]["embedding"] = {"backlog": 40, "lag_seconds": 900.0}
        samples_of(behind)
    if state == "sampler stopped":
        HealthSample.objects.create(taken_at=timezone.now() - timedelta(minutes=6), figures=sample_figures(hit=0, miss=0))
    with redis_unreachable() if state == "redis down" else nullcontext():
        answer = operator_client.get(PAGE)

    said = problems_said(answer)
    assert len(said) > 1, state  # the state is named
    for text in said:
        for deployment_only in DEPLOYMENT_ONLY:
            assert deployment_only not in text, (state, text)
