"""The health page's one read: ``health_report``, for the deployment or for one tenant.

Contract
--------
* The engines (PostgreSQL, the read replica when configured, Redis, the broker) are those of the
  readiness decision (``memoryproject.health.readiness``, handed in by the project's URLs): one
  round of checks, each with its own short timeout, shared with the probes of this process for a
  second. Its status and its message are the page's headline, word for word; nothing here decides
  differently whether writes are accepted.
* What follows the checks asks only the engines that answered: the workers' heartbeats, the counts
  and the samples from PostgreSQL, the queues from the broker. An engine down costs its own timeout
  once, in the readiness round, which also keeps its error text (shown to a superuser only).
* Scopes (``Scope``): ``deployment`` (a superuser) sees everything: error texts, queue depths and
  consumers, every worker by node name, the figures of every tenant added up. ``tenant`` (a staff
  user bound to a tenant) sees whether each engine answers, whether a worker consumes each queue and
  when one was last heard from, and its own tenant's figures only: its cache hit rate, dead letters,
  embedding backlog and conversations awaiting a cache repair. Nothing of other tenants and nothing
  that adds them up (queue depths, the persist lag, the deployment's hit rate, error texts, node
  names) reaches its report: its samples are read from PostgreSQL by its own slug's key.
  ``engines`` (a staff user bound to no tenant) sees what ``tenant`` sees without any figure.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import DatabaseError
from django.db.models.fields.json import KeyTransform
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString

from console.figures import interval_figures
from console.heartbeats import MISSING_AFTER_SECONDS
from console.models import HealthSample, WorkerHeartbeat
from console.tasks import SAMPLE_SECONDS
from conversations.models import CacheRepair, DeadLetter
from conversations.selectors import broker_status
from core.charts import line_chart, number
from tenants.models import Tenant

# The charts' span, on a grid of one slot per sample: a slot with no sample is a gap.
HISTORY = timedelta(hours=1)
# Samples further apart than this are not subtracted (a stopped sampler is a gap, not a long interval).
INTERVAL_AT_MOST = timedelta(seconds=2.5 * SAMPLE_SECONDS)
# No sample for three intervals: the sampler (beat, or the persist queue's workers) is stopped.
SAMPLES_STALE_AFTER = timedelta(seconds=3 * SAMPLE_SECONDS)
# The thresholds a figure is read against (the charts' least top, and a problem past it).
LAG_LIMIT_SECONDS = 1.0
EMBEDDING_LAG_LIMIT_SECONDS = 600.0

ENGINES = {
    # check name -> (what it is, its setting)
    "database": ("PostgreSQL", "DATABASE_URL"),
    "replica": ("The read replica", "DATABASE_REPLICA_URL"),
    "cache": ("Redis", "REDIS_URL"),
    "broker": ("The broker", "CELERY_BROKER_URL"),
}
ENGINE_ACTIONS = {
    "database": "Start PostgreSQL or restore this process's route to it. Acknowledged writes wait in the "
    "persist queue and are persisted once it answers; nothing is lost.",
    "replica": "Start the replica or restore the route to it (or unset DATABASE_REPLICA_URL). Nothing waits on it.",
    "cache": "Start Redis or restore this process's route to it. The conversations written meanwhile "
    "({repairs}) are repaired by the sweep (every 15 s) once it answers.",
    "broker": "Start the broker or restore this process's route to it. While Redis answers, appends are "
    "refused with 503 broker_unavailable until it is back.",
}


class Scope:
    DEPLOYMENT = "deployment"
    TENANT = "tenant"
    ENGINES = "engines"


class ReadinessDecision(Protocol):
    """What ``memoryproject.health.readiness`` answers (``Readiness``)."""

    status: str
    checks: dict[str, dict[str, Any]]
    message: str
    errors: dict[str, str]


@dataclass(frozen=True)
class Engine:
    key: str
    name: str
    setting: str
    ok: bool
    latency_ms: float | None
    error: str = ""  # the deployment scope only


@dataclass(frozen=True)
class Worker:
    hostname: str
    pid: int
    queues: list[str]
    started_at: datetime
    seen_at: datetime
    missing: bool
    heard: str  # "12 s ago"


@dataclass(frozen=True)
class Queue:
    role: str  # "persist" or "derived"
    name: str
    purpose: str
    depth: int | None  # the deployment scope only
    consumers: int | None  # from the broker; None when it cannot tell (down, or a Redis broker)
    live_workers: int
    last_heard: datetime | None
    last_heard_ago: str
    served: bool | None  # None: neither the broker nor the heartbeats can tell
    start_command: str
    broker_answers: bool  # False: its workers (served from their heartbeats) wait for the broker


@dataclass(frozen=True)
class Figure:
    label: str
    value: str
    detail: str = ""
    kind: str = ""  # "", "warning" or "error"


@dataclass(frozen=True)
class Problem:
    severity: str  # "error", "warning" or "info"
    text: str
    action: str = ""
    command: str = ""
    link: str = ""
    link_text: str = ""


@dataclass
class HealthReport:
    scope: str
    tenant: str | None
    checked_at: datetime
    status: str  # the readiness decision's: "ready", "degraded" or "unavailable"
    message: str  # the readiness decision's, word for word
    engines: list[Engine]
    queues: list[Queue] = field(default_factory=list)
    workers: list[Worker] = field(default_factory=list)  # the deployment scope only
    figures: list[Figure] = field(default_factory=list)
    charts: list[SafeString] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    last_sample_at: datetime | None = None
    samples_readable: bool = True

    @property
    def overall(self) -> str:
        """The worst of the decision and the problems: "error", "warning" or "ok"."""
        severities = {problem.severity for problem in self.problems}
        if self.status == "unavailable" or "error" in severities:
            return "error"
        return "warning" if self.status == "degraded" or "warning" in severities else "ok"


def worker_commands() -> dict[str, str]:
    """The Procfile's commands starting a worker on each queue, and beat."""
    return {
        "persist": f"celery -A memoryproject worker -Q {settings.MEMORY_QUEUE} -n write-$$@%h --pool threads "
        "--concurrency 8 --loglevel INFO",
        "derived": f"celery -A memoryproject worker -Q {settings.MEMORY_DERIVED_QUEUE} -n derived-$$@%h "
        "--concurrency 2 --loglevel INFO",
        "beat": "celery -A memoryproject beat --schedule var/celerybeat-schedule --loglevel INFO",
    }


def health_report(*, readiness: Callable[[], ReadinessDecision], scope: str, tenant: Tenant | None = None) -> HealthReport:
    """The health page's panel for ``scope`` (``tenant``'s with the tenant scope)."""
    if (scope == Scope.TENANT) != (tenant is not None):
        raise ValueError("The tenant scope needs its tenant, and only it.")
    decision = readiness()
    now = timezone.now()
    deployment = scope == Scope.DEPLOYMENT
    report = HealthReport(
        scope=scope,
        tenant=tenant.slug if tenant else None,
        checked_at=now,
        status=decision.status,
        message=decision.message,
        engines=_engines(decision, with_errors=deployment),
    )
    up = {engine.key: engine.ok for engine in report.engines}
    broker = broker_status() if up["broker"] else None  # the queues' depths and consumers
    heartbeats = _heartbeats(now=now) if up["database"] else None
    report.queues = _queues(broker, heartbeats, now=now, with_depths=deployment)
    if deployment and heartbeats is not None:
        report.workers = heartbeats
    samples: list[dict[str, Any]] = []
    if up["database"]:
        try:
            report.last_sample_at = HealthSample.objects.order_by("-taken_at").values_list("taken_at", flat=True).first()
            if scope != Scope.ENGINES:
                samples = _samples(since=now - HISTORY, tenant=tenant)
        except DatabaseError:
            report.samples_readable = False
    else:
        report.samples_readable = False
    counts = _counts(tenant=tenant) if up["database"] and scope != Scope.ENGINES else {}
    if scope != Scope.ENGINES:
        report.figures = _figures(samples, counts, broker=broker, slug=report.tenant)
        report.charts = _charts(samples, slug=report.tenant, now=now)
    report.problems = _problems(report, samples=samples, counts=counts, now=now)
    return report


# --- The engines and the workers ------------------------------------------------------------------


def _engines(decision: ReadinessDecision, *, with_errors: bool) -> list[Engine]:
    engines = []
    for key, (name, setting) in ENGINES.items():
        check = decision.checks.get(key)
        if check is None:  # no replica configured
            continue
        error = decision.errors.get(key, "") if with_errors and not check["ok"] else ""
        engines.append(
            Engine(key=key, name=name, setting=setting, ok=check["ok"], latency_ms=check.get("latency_ms"), error=error)
        )
    return engines


def _heartbeats(*, now: datetime) -> list[Worker] | None:
    """Every worker heard from within the day, the newest first; None when PostgreSQL did not answer."""
    missing_before = now - timedelta(seconds=MISSING_AFTER_SECONDS)
    try:
        rows = list(WorkerHeartbeat.objects.order_by("-seen_at"))
    except DatabaseError:
        return None
    return [
        Worker(
            hostname=row.hostname,
            pid=row.pid,
            queues=list(row.queues),
            started_at=row.started_at,
            seen_at=row.seen_at,
            missing=row.seen_at < missing_before,
            heard=_ago(now - row.seen_at),
        )
        for row in rows
    ]


def _queues(broker: dict[str, Any] | None, heartbeats: list[Worker] | None, *, now: datetime, with_depths: bool) -> list[Queue]:
    commands = worker_commands()
    queues = []
    for role, name, purpose, depth_key, consumers_key in (
        ("persist", settings.MEMORY_QUEUE, "acknowledged writes on their way to PostgreSQL", "queue_depth", "consumers"),
        (
            "derived",
            settings.MEMORY_DERIVED_QUEUE,
            "vectors, summaries and extracted memories",
            "derived_queue_depth",
            "derived_consumers",
        ),
    ):
        answered = broker is not None and broker["ok"]
        consumers = broker[consumers_key] if answered else None
        live = [w for w in heartbeats or () if name in w.queues and not w.missing]
        heard = [w.seen_at for w in heartbeats or () if name in w.queues]
        last_heard = max(heard, default=None)
        if consumers is not None:
            served: bool | None = consumers > 0
        elif heartbeats is not None:
            served = bool(live)
        else:
            served = None
        queues.append(
            Queue(
                role=role,
                name=name,
                purpose=purpose,
                depth=broker[depth_key] if answered and with_depths else None,
                consumers=consumers,
                live_workers=len(live),
                last_heard=last_heard,
                last_heard_ago=_ago(now - last_heard) if last_heard else "never",
                served=served,
                start_command=commands[role],
                broker_answers=answered,
            )
        )
    return queues


# --- The samples and the figures --------------------------------------------------------------------


def _samples(*, since: datetime, tenant: Tenant | None) -> list[dict[str, Any]]:
    """The samples of the last hour, oldest first, each as {"taken_at", "figures"}. For a tenant,
    PostgreSQL answers its slug's part of each sample (and the sample's source) and nothing else."""
    rows = HealthSample.objects.filter(taken_at__gte=since).order_by("taken_at")
    if tenant is None:
        return list(rows.values("taken_at", "figures"))
    own = rows.annotate(
        source=KeyTransform("source", "figures"), own=KeyTransform(tenant.slug, KeyTransform("tenants", "figures"))
    ).values("taken_at", "source", "own")
    return [
        {"taken_at": row["taken_at"], "figures": {"source": row["source"] or {}, "tenants": {tenant.slug: row["own"] or {}}}}
        for row in own
    ]


def _counts(*, tenant: Tenant | None) -> dict[str, int]:
    """The live counts PostgreSQL holds: dead letters waiting for a replay, conversations awaiting a
    cache repair (the tenant's, with a tenant)."""
    try:
        if tenant is None:
            # Every tenant's rows: the deployment's own figures.
            dead_letters = DeadLetter.unscoped.filter(replayed_at__isnull=True).count()
            repairs = CacheRepair.unscoped.count()
        else:
            dead_letters = DeadLetter.objects.for_tenant(tenant).filter(replayed_at__isnull=True).count()
            repairs = CacheRepair.objects.for_tenant(tenant).count()
    except DatabaseError:
        return {}
    return {"dead_letters": dead_letters, "cache_repairs": repairs}


def _with_intervals(samples: Sequence[dict[str, Any]], *, slug: str | None) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each sample with what happened since the one before it (when that one is close enough)."""
    paired = []
    previous: dict[str, Any] | None = None
    for sample in samples:
        earlier = None
        if previous is not None and sample["taken_at"] - previous["taken_at"] <= INTERVAL_AT_MOST:
            earlier = previous["figures"]
        paired.append((sample, interval_figures(sample["figures"], earlier, tenant=slug)))
        previous = sample
    return paired


def _own(figures: dict[str, Any], slug: str | None) -> dict[str, Any]:
    """A sample's figures of the scope: the deployment's, or the tenant's part (``slug``)."""
    if slug is None:
        return figures
    own = figures.get("tenants", {}).get(slug) or {}
    if figures.get("source", {}).get("counted"):  # PostgreSQL's counts were read: none of the tenant's is 0
        own = {"dead_letters": {"waiting": 0}, "cache_repairs": 0} | own
    return own


def _figures(
    samples: list[dict[str, Any]],
    counts: dict[str, int],
    *,
    broker: dict[str, Any] | None,
    slug: str | None,
) -> list[Figure]:
    paired = _with_intervals(samples, slug=slug)
    latest, interval = paired[-1] if paired else (None, {})
    own = _own(latest["figures"], slug) if latest else {}
    seconds = _interval_seconds(samples)  # None, or 0 for two samples taken together: no span to name
    span = f"the {_duration(seconds)}" if seconds else "the last interval"
    when = f"over {span} to {latest['taken_at']:%H:%M:%S} UTC" if latest else ""
    rate = interval.get("hit_rate")
    figures: list[Figure] = []
    if slug is None:
        answered = broker is not None and broker["ok"]
        figures.append(
            Figure(
                "Persist queue",
                number(broker["queue_depth"]) if answered else "unknown",
                "waiting now" if answered else "the broker does not answer",
            )
        )
        figures.append(
            Figure(
                "Derived queue",
                number(broker["derived_queue_depth"]) if answered else "unknown",
                "waiting now" if answered else "the broker does not answer",
            )
        )
        p99 = interval.get("lag_p99")
        figures.append(
            Figure(
                "Persist lag p50 / p99",
                f"{_seconds(interval.get('lag_p50'))} / {_seconds(p99)}",
                f"{number(interval['persisted'])} writes {when}"
                if interval.get("persisted")
                else f"no write persisted {when}".strip(),
                "warning" if p99 is not None and p99 > LAG_LIMIT_SECONDS else "",
            )
        )
    figures.append(
        Figure(
            "Cache hit rate",
            _percent(rate),
            f"{number(interval['lookups'])} lookups {when}" if interval.get("lookups") else f"no lookup {when}".strip(),
        )
    )
    waiting = counts.get("dead_letters")
    figures.append(
        Figure(
            "Dead letters",
            number(waiting) if waiting is not None else "unknown",
            "waiting for a replay" if waiting is not None else "PostgreSQL does not answer",
            "warning" if waiting else "",
        )
    )
    embedding = own.get("embedding") or {}
    backlog, lag = embedding.get("backlog"), embedding.get("lag_seconds")
    figures.append(
        Figure(
            "Embedding backlog",
            number(backlog) if backlog is not None else "unknown",
            f"the oldest waiting for {_duration(lag)}" if lag else ("none waits" if backlog == 0 else "no sample"),
            "warning" if lag and lag > EMBEDDING_LAG_LIMIT_SECONDS else "",
        )
    )
    repairs = counts.get("cache_repairs")
    figures.append(
        Figure(
            "Awaiting cache repair",
            number(repairs) if repairs is not None else "unknown",
            "conversations served from PostgreSQL until the sweep",
        )
    )
    return figures


def _charts(samples: list[dict[str, Any]], *, slug: str | None, now: datetime) -> list[SafeString]:
    """The last hour of each figure, one point per sample slot (``None``: no sample then)."""
    slots = int(HISTORY.total_seconds() // SAMPLE_SECONDS)
    step = timedelta(seconds=SAMPLE_SECONDS)
    grid: list[tuple[datetime, tuple[dict[str, Any], dict[str, Any]] | None]] = [
        (now - (slots - 1 - index) * step, None) for index in range(slots)
    ]
    for sample, interval in _with_intervals(samples, slug=slug):
        index = slots - 1 - int((now - sample["taken_at"]) // step)
        if 0 <= index < slots:
            grid[index] = (grid[index][0], (sample, interval))

    def series(read: Callable[[dict[str, Any], dict[str, Any]], float | None]) -> list[tuple[datetime, float | None]]:
        return [(moment, read(_own(found[0]["figures"], slug), found[1]) if found else None) for moment, found in grid]

    def queue(role: str) -> Callable[[dict[str, Any], dict[str, Any]], float | None]:
        return lambda figures, _: ((figures.get("queues") or {}).get(role) or {}).get("depth")

    def rate(_: dict[str, Any], interval: dict[str, Any]) -> float | None:
        return None if interval.get("hit_rate") is None else round(100 * interval["hit_rate"], 1)

    def dead_letters(figures: dict[str, Any], _: dict[str, Any]) -> float | None:
        return (figures.get("dead_letters") or {}).get("waiting")

    def backlog(figures: dict[str, Any], _: dict[str, Any]) -> float | None:
        return (figures.get("embedding") or {}).get("backlog")

    charts = []
    if slug is None:
        charts.append(line_chart(series(queue("persist")), label="Persist queue", unit="waiting"))
        charts.append(line_chart(series(queue("derived")), label="Derived queue", unit="waiting"))
        p99 = series(lambda _, interval: interval.get("lag_p99"))
        over = any(value is not None and value > LAG_LIMIT_SECONDS for _, value in p99)
        charts.append(line_chart(p99, label="Persist lag p99", unit="s", y_max=LAG_LIMIT_SECONDS, kind="warning" if over else ""))
        charts.append(
            line_chart(
                series(lambda _, interval: interval.get("lag_p50")), label="Persist lag p50", unit="s", y_max=LAG_LIMIT_SECONDS
            )
        )
    charts.append(line_chart(series(rate), label="Cache hit rate", unit="%", y_max=100))
    charts.append(line_chart(series(dead_letters), label="Dead letters waiting"))
    charts.append(line_chart(series(backlog), label="Embedding backlog", unit="messages"))
    if slug is not None:
        charts.append(line_chart(series(lambda figures, _: figures.get("cache_repairs")), label="Awaiting cache repair"))
    return charts


# --- The problems, in words, with what to do ---------------------------------------------------------


def _problems(report: HealthReport, *, samples: list[dict[str, Any]], counts: dict[str, int], now: datetime) -> list[Problem]:
    problems: list[Problem] = []
    deployment = report.scope == Scope.DEPLOYMENT
    for engine in report.engines:
        if not engine.ok:
            repairs = counts.get("cache_repairs")
            problems.append(
                Problem(
                    severity="error" if report.status == "unavailable" or engine.key == "database" else "warning",
                    text=f"{engine.name} ({engine.setting}) does not answer.",
                    action=ENGINE_ACTIONS[engine.key].format(
                        repairs=f"{repairs} so far" if repairs is not None else "counted once PostgreSQL answers"
                    ),
                )
            )
    for queue in report.queues:
        # A tenant's operator reads no queue name and no command: the deployment's operators run the workers.
        label = queue.name if deployment else f"the {queue.role} queue"
        if queue.served is False:
            waiting = f" ({number(queue.depth)} now)" if queue.depth is not None else ""
            consequence = (
                f"acknowledged writes wait in the queue{waiting} and are not persisted; they are served from Redis meanwhile"
                if queue.role == "persist"
                else f"{queue.purpose} wait in the queue{waiting}; conversations and their windows are not held up"
            )
            heard = [w for w in report.workers if queue.name in w.queues and not w.missing]
            if heard and queue.consumers == 0:
                problems.append(
                    Problem(
                        severity="warning",
                        text=f"No consumer on {label} at the broker, though {len(heard)} worker(s) of it "
                        f"{'is' if len(heard) == 1 else 'are'} heard from: {consequence}.",
                        action="They are reconnecting to the broker; if this lasts, restart them.",
                    )
                )
                continue
            problems.append(
                Problem(
                    severity="error" if queue.role == "persist" else "warning",
                    text=f"No worker consumes {label}: {consequence}.",
                    action="Start one (the Procfile's "
                    f"{'worker' if queue.role == 'persist' else 'derived'} process; with make run, restart it):"
                    if deployment
                    else "The deployment's operators must start one; nothing acknowledged is lost meanwhile.",
                    command=queue.start_command if deployment else "",
                )
            )
    for worker in report.workers:
        if worker.missing:
            problems.append(
                Problem(
                    severity="warning",
                    text=f"Worker {worker.hostname} (pid {worker.pid}, {', '.join(worker.queues)}) was last heard "
                    f"from {_ago(now - worker.seen_at)} and did not stop cleanly: killed, out of memory or its host gone. "
                    "The tasks it held went back to the queue.",
                    action="Start it again if it should run; if it was stopped on purpose, nothing to do "
                    "(its record goes after a day).",
                )
            )
    problems += _figure_problems(report, samples=samples, counts=counts, deployment=deployment)
    if report.scope != Scope.ENGINES:
        problems += _sample_problems(report, now=now)
    return problems


def _figure_problems(
    report: HealthReport, *, samples: list[dict[str, Any]], counts: dict[str, int], deployment: bool
) -> list[Problem]:
    problems: list[Problem] = []
    paired = _with_intervals(samples, slug=report.tenant)
    latest, interval = paired[-1] if paired else (None, {})
    p99 = interval.get("lag_p99") if deployment else None
    if p99 is not None and p99 > LAG_LIMIT_SECONDS:
        persist = next(queue for queue in report.queues if queue.role == "persist")
        problems.append(
            Problem(
                severity="warning",
                text=f"Persist lag p99 is {_seconds(p99)} (over {_seconds(LAG_LIMIT_SECONDS)}): acknowledged writes "
                f"take that long to reach PostgreSQL ({number(persist.depth)} waiting in {persist.name}); they are "
                "served from Redis meanwhile.",
                action="Add write workers (the Procfile's worker process), or look at PostgreSQL's load.",
                command=persist.start_command,
            )
        )
    waiting = counts.get("dead_letters")
    if waiting:
        problems.append(
            Problem(
                severity="warning",
                text=f"{number(waiting)} {'dead letters wait' if waiting != 1 else 'dead letter waits'} for a replay: tasks that failed "
                "for good, kept whole with their error.",
                action="Fix what made them fail, then replay them from the list (or manage.py replay_dead_letters).",
                link=reverse("admin:conversations_deadletter_changelist") + "?replayed_at__isempty=1",
                link_text="Dead letters waiting",
            )
        )
    embedding = (_own(latest["figures"], report.tenant) if latest else {}).get("embedding") or {}
    lag = embedding.get("lag_seconds")
    if lag and lag > EMBEDDING_LAG_LIMIT_SECONDS:
        derived = next(queue for queue in report.queues if queue.role == "derived")
        problems.append(
            Problem(
                severity="warning",
                text=f"Vectors are behind: {number(embedding.get('backlog'))} messages wait for theirs, the oldest for "
                f"{_duration(lag)}; search finds them by their words only meanwhile.",
                action="Check that a worker consumes the derived queue and keeps up (the hourly backfill catches up "
                "what it missed).",
                command=derived.start_command if deployment else "",
            )
        )
    return problems


def _sample_problems(report: HealthReport, *, now: datetime) -> list[Problem]:
    if not report.samples_readable:
        return [
            Problem(
                severity="info",
                text="The figures' history cannot be read while PostgreSQL does not answer; the charts show what was "
                "last fetched.",
            )
        ]
    deployment = report.scope == Scope.DEPLOYMENT
    command = worker_commands()["beat"] if deployment else ""
    persist = next(queue for queue in report.queues if queue.role == "persist")
    who = f"Celery beat or every worker of {persist.name if deployment else 'the persist queue'}"
    action = (
        "Run exactly one beat in the deployment (the Procfile's beat process), and a worker of the persist queue:"
        if deployment
        else "The deployment's operators must start Celery beat."
    )
    if report.last_sample_at is None:
        return [
            Problem(
                severity="info",
                text=f"No sample yet: the figures and charts fill in within {int(SAMPLE_SECONDS)} s of {who} running.",
                action=action,
                command=command,
            )
        ]
    age = now - report.last_sample_at
    if age <= SAMPLES_STALE_AFTER:
        return []
    return [
        Problem(
            severity="warning",
            text=f"No sample since {report.last_sample_at:%H:%M:%S} UTC ({_ago(age)}): {who} is stopped. The charts have "
            "a gap from then and the figures over an interval are those of the last sample.",
            action=action,
            command=command,
        )
    ]


# --- Words ----------------------------------------------------------------------------------------


def _interval_seconds(samples: list[dict[str, Any]]) -> float | None:
    if len(samples) < 2:
        return None
    return (samples[-1]["taken_at"] - samples[-2]["taken_at"]).total_seconds()


def _seconds(value: float | None) -> str:
    if value is None:
        return "no data"
    return f"{value * 1000:.0f} ms" if value < 1 else number(round(value, 2), "s")


def _percent(value: float | None) -> str:
    return "no data" if value is None else f"{100 * value:.1f} %"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "last interval"
    seconds = round(seconds)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _ago(age: timedelta) -> str:
    return f"{_duration(max(age.total_seconds(), 0.0))} ago"  # a worker's clock may run a little ahead
