"""The health page's one read: ``health_report``, for the deployment or for one tenant.

Contract
--------
* The engines (PostgreSQL, the read replica when configured, Redis, the broker) are those of the
  readiness decision (``memoryproject.health.readiness``, handed in by the project's URLs): one
  round of checks, each with its own short timeout, shared with the probes of this process for a
  second. Its status and its message are the page's headline, word for word (for a reader who does
  not run the deployment, its reason without the advice to read the error texts with the metrics
  token, which only the deployment's operators hold); nothing here decides differently whether
  writes are accepted.
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
* Each problem says what its reader can do: the commands, the processes and the engines are the
  deployment's operators' (a superuser's); anyone else is told to ask them, and offered what the
  admin lets them do themselves (``Abilities``: the dead letters' list and its replay action).
* A worker is judged by its heartbeat and by the broker together: its heartbeat says whether its
  consumer held a connection to the broker then, so a queue the broker counts no consumer on is
  either waited for by workers connecting (they said so) or left by workers that said they were
  connected (stopped since, killed or lost), never "reconnecting" on the strength of a recent beat.
* A figure and its chart show the same latest value (``_latest``), with the time it was read when
  it is not the newest sample's; a figure that cannot be read says why, and what would fill it.
* The reranker (``search.rerank``): whether one is configured, whether its breaker is open, and its
  calls of this hour and the last with their mean latency, read from Redis without calling it: the
  deployment's reranker for the deployment scope, the tenant's own reranker and calls for its tenant.
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
from search.rerank import reranker_state
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
# An engine down: what its deployment's operators do, then what happens meanwhile (told to everyone).
ENGINE_FIXES = {
    "database": "Start PostgreSQL or restore this process's route to it.",
    "replica": "Start the replica or restore the route to it (or unset DATABASE_REPLICA_URL).",
    "cache": "Start Redis or restore this process's route to it.",
    "broker": "Start the broker or restore this process's route to it.",
}
ENGINE_MEANWHILE = {
    "database": "Acknowledged writes wait in the persist queue and are persisted once it answers; nothing is lost.",
    "replica": "Nothing waits on it: its reads go to PostgreSQL.",
    "cache": "The conversations written meanwhile ({repairs}) are repaired by the sweep (every 15 s) once it answers.",
    "broker": "While Redis answers, appends are refused with 503 broker_unavailable until it is back.",
}
# What a reader who does not run the deployment is told to do about what only its operators can mend.
ASK_OPERATORS = "Only your deployment's operators can {what}: tell them, if they do not know yet."
# Where the figures over an interval are counted from when the processes keep their metrics apart.
MULTIPROCESS_SETTING = "PROMETHEUS_MULTIPROC_DIR"


class Scope:
    DEPLOYMENT = "deployment"
    TENANT = "tenant"
    ENGINES = "engines"


@dataclass(frozen=True)
class Abilities:
    """What the page's reader may do in the admin beyond reading the page (read by the view from the
    admin's own permission checks): a problem offers only these."""

    dead_letter_list: bool = False
    dead_letter_replay: bool = False


EVERYTHING = Abilities(dead_letter_list=True, dead_letter_replay=True)


class ReadinessDecision(Protocol):
    """What ``memoryproject.health.readiness`` answers (``Readiness``)."""

    status: str
    checks: dict[str, dict[str, Any]]
    message: str
    errors: dict[str, str]
    reason: str


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
    heard: str  # "12 s ago"
    broker_connected: bool | None  # its consumer's connection at its last beat (None: not said)
    # "alive"; "connecting" (its last beat said it has no broker connection); "left" (it said it was
    # connected, and the broker counts no consumer on its queues since); "missing" (no beat for 30 s).
    state: str

    @property
    def missing(self) -> bool:
        return self.state == "missing"


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
    broker_answers: bool  # whether the broker answered this process (else served is the heartbeats')
    connected_workers: int = 0  # live workers whose last beat said they hold a broker connection


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
    abilities: Abilities = EVERYTHING

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


def health_report(
    *,
    readiness: Callable[[], ReadinessDecision],
    scope: str,
    tenant: Tenant | None = None,
    abilities: Abilities | None = None,
) -> HealthReport:
    """The health page's panel for ``scope`` (``tenant``'s with the tenant scope); ``abilities`` are
    what its reader may do in the admin (everything for the deployment scope, by default nothing else)."""
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
        # The advice that follows the reason reads the error texts with the metrics token: the deployment's.
        message=decision.message if deployment else decision.reason,
        engines=_engines(decision, with_errors=deployment),
        abilities=abilities or (EVERYTHING if deployment else Abilities()),
    )
    up = {engine.key: engine.ok for engine in report.engines}
    broker = broker_status() if up["broker"] else None  # the queues' depths and consumers
    heartbeats = _heartbeats(now=now, broker=broker) if up["database"] else None
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
    paired = _with_intervals(samples, slug=report.tenant)  # each sample with its interval, read once
    if scope != Scope.ENGINES:
        report.figures = _figures(paired, counts, broker=broker, slug=report.tenant)
        report.figures.extend(_reranker_figures(tenant))
        report.charts = _charts(paired, slug=report.tenant, now=now)
    report.problems = _problems(report, paired=paired, counts=counts, heard=heartbeats or [], now=now)
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


def _heartbeats(*, now: datetime, broker: dict[str, Any] | None) -> list[Worker] | None:
    """Every worker heard from within the day, the newest first, each in its state (``Worker.state``,
    read against the broker's consumer counts when it answered); None when PostgreSQL did not answer."""
    missing_before = now - timedelta(seconds=MISSING_AFTER_SECONDS)
    try:
        rows = list(WorkerHeartbeat.objects.order_by("-seen_at"))
    except DatabaseError:
        return None
    consumers = _consumers(broker)
    workers = []
    for row in rows:
        # The broker's counts of the queues it consumes (those the page knows): all 0 means it left them.
        counted = [consumers[name] for name in row.queues if name in consumers]
        if row.seen_at < missing_before:
            state = "missing"
        elif row.broker_connected is False:
            state = "connecting"
        elif counted and not any(counted):
            state = "left"
        else:
            state = "alive"
        workers.append(
            Worker(
                hostname=row.hostname,
                pid=row.pid,
                queues=list(row.queues),
                started_at=row.started_at,
                seen_at=row.seen_at,
                heard=_ago(now - row.seen_at),
                broker_connected=row.broker_connected,
                state=state,
            )
        )
    return workers


def _consumers(broker: dict[str, Any] | None) -> dict[str, int]:
    """The broker's consumer count of each queue, by name; empty when it did not answer."""
    if broker is None or not broker["ok"]:
        return {}
    return {broker["queue"]: broker["consumers"], broker["derived_queue"]: broker["derived_consumers"]}


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
        connected = [w for w in live if w.broker_connected is not False]
        last_heard = max(heard, default=None)
        if consumers is not None:
            served: bool | None = consumers > 0
        elif heartbeats is not None:
            served = bool(live)  # consumed by connected workers, or waited for by connecting ones
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
                connected_workers=len(connected),
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


# Each sample of the hour, oldest first, with what happened since the one before it (``_with_intervals``).
Paired = list[tuple[dict[str, Any], dict[str, Any]]]


def _with_intervals(samples: Sequence[dict[str, Any]], *, slug: str | None) -> Paired:
    """Each sample with what happened since the one before it (when that one is close enough), and
    the interval's length in ``seconds`` (None without an interval)."""
    paired = []
    previous: dict[str, Any] | None = None
    for sample in samples:
        earlier, seconds = None, None
        if previous is not None and sample["taken_at"] - previous["taken_at"] <= INTERVAL_AT_MOST:
            earlier = previous["figures"]
            seconds = (sample["taken_at"] - previous["taken_at"]).total_seconds()
        paired.append((sample, interval_figures(sample["figures"], earlier, tenant=slug) | {"seconds": seconds}))
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


# What a figure and its chart read from a sample: (the sample's figures of the scope, its interval).
Reader = Callable[[dict[str, Any], dict[str, Any]], float | None]


def _depth(role: str) -> Reader:
    return lambda figures, _: ((figures.get("queues") or {}).get(role) or {}).get("depth")


def _interval(key: str) -> Reader:
    return lambda _, interval: interval.get(key)


def _hit_rate_percent(_: dict[str, Any], interval: dict[str, Any]) -> float | None:
    return None if interval.get("hit_rate") is None else round(100 * interval["hit_rate"], 1)


def _dead_letters_waiting(figures: dict[str, Any], _: dict[str, Any]) -> float | None:
    return (figures.get("dead_letters") or {}).get("waiting")


def _backlog(figures: dict[str, Any], _: dict[str, Any]) -> float | None:
    return (figures.get("embedding") or {}).get("backlog")


def _repairs(figures: dict[str, Any], _: dict[str, Any]) -> float | None:
    return figures.get("cache_repairs")


@dataclass(frozen=True)
class Reading:
    """The newest sample a figure could be read from, what it read, and whether a newer sample could not."""

    sample: dict[str, Any]
    own: dict[str, Any]
    interval: dict[str, Any]
    value: float
    newest: bool


def _latest(paired: Paired, read: Reader, *, slug: str | None) -> Reading | None:
    """The newest sample of the hour ``read`` knows a value in: the figure shows it, as its chart's
    caption does (``core.charts.line_chart``: the latest value drawn)."""
    for index in range(len(paired) - 1, -1, -1):
        sample, interval = paired[index]
        own = _own(sample["figures"], slug)
        value = read(own, interval)
        if value is not None:
            return Reading(sample=sample, own=own, interval=interval, value=value, newest=index == len(paired) - 1)
    return None


def _over(sample: dict[str, Any], interval: dict[str, Any]) -> str:
    """The interval a figure was counted over, in words ("over the 30 s to 05:32:16 UTC")."""
    seconds = interval.get("seconds")
    span = f"the {_duration(seconds)}" if seconds else "the last interval"  # 0: two samples taken together
    return f"over {span} to {sample['taken_at']:%H:%M:%S} UTC"


def _source(paired: Paired) -> dict[str, Any]:
    """Who took the newest sample, and how (its process, whether it added every process up)."""
    return paired[-1][0]["figures"].get("source", {})


def _unknown_interval(paired: Paired, what: str) -> str:
    """Why no interval of the hour has a figure (``what``: "lookup", "write persisted")."""
    if not paired:
        return "no sample in the last hour"
    intervals = [(sample, interval) for sample, interval in paired if interval["seconds"] is not None]
    if not intervals:
        return "no two samples close enough to subtract yet"
    newest = _over(*intervals[-1])
    if _source(paired).get("multiprocess"):
        return f"no {what} {newest}"
    # The other processes' counts never reach the sample: say so rather than let "no data" pass for idle.
    return f"no {what} {newest} in the process taking the samples, which counts its own only (see what needs doing)"


def _interval_figure(
    label: str,
    reading: Reading | None,
    shown: Callable[[Reading], str],
    *,
    counted: tuple[str, str, str],
    unknown: str,
    kind: str = "",
) -> Figure:
    """A figure over an interval: its latest ``reading`` shown, with how many it counted over which
    interval (``counted``: the interval's key, its noun, and the noun of none since), or why none."""
    if reading is None:
        return Figure(label, "no data", unknown)
    key, noun, none = counted
    since = "" if reading.newest else f"; no {none} since"
    detail = f"{number(reading.interval[key])} {noun} {_over(reading.sample, reading.interval)}{since}"
    return Figure(label, shown(reading), detail, kind)


def _reranker_figures(tenant: Tenant | None) -> list[Figure]:
    """The reranker's state and recent calls (see the module's contract)."""
    state = reranker_state(tenant)
    if not state.configured:
        return [Figure("Reranker", "off", "MEMORY_RERANK_URL is not set: searches answer the hybrid order")]
    named = " ".join(part for part in (state.api, state.model) if part)
    if state.tenant_url:
        named += ", at the tenant's own URL"
    if state.breaker_open:
        status = Figure(
            "Reranker",
            "not called",
            f"{named}: it failed ({state.breaker_reason}); tried again in {_duration(state.breaker_seconds_left)}",
            "warning",
        )
    else:
        status = Figure("Reranker", "on", named)
    recent = state.recent
    if recent is None:
        return [status, Figure("Rerank calls", "unknown", "Redis does not answer")]
    latency = f", {number(recent.mean_milliseconds)} ms on average" if recent.mean_milliseconds is not None else ""
    calls = Figure(
        "Rerank calls",
        f"{number(recent.ok)} answered / {number(recent.failed)} failed",
        f"this hour and the last{latency}; {number(recent.skipped)} searches skipped it while its breaker was open",
        "warning" if recent.failed else "",
    )
    return [status, calls]


def _figures(
    paired: Paired,
    counts: dict[str, int],
    *,
    broker: dict[str, Any] | None,
    slug: str | None,
) -> list[Figure]:
    figures: list[Figure] = []
    if slug is None:
        answered = broker is not None and broker["ok"]
        for label, key in (("Persist queue", "queue_depth"), ("Derived queue", "derived_queue_depth")):
            figures.append(
                Figure(
                    label,
                    number(broker[key]) if answered else "unknown",
                    "waiting now" if answered else "the broker does not answer",
                )
            )
        lag = _latest(paired, _interval("lag_p99"), slug=slug)
        figures.append(
            _interval_figure(
                "Persist lag p50 / p99",
                lag,
                lambda reading: f"{_seconds(reading.interval.get('lag_p50'))} / {_seconds(reading.value)}",
                counted=("persisted", "writes", "write persisted"),
                unknown=_unknown_interval(paired, "write persisted"),
                kind="warning" if lag and lag.newest and lag.value > LAG_LIMIT_SECONDS else "",
            )
        )
    figures.append(
        _interval_figure(
            "Cache hit rate",
            _latest(paired, _hit_rate_percent, slug=slug),
            lambda reading: number(reading.value, "%"),
            counted=("lookups", "lookups", "lookup"),
            unknown=_unknown_interval(paired, "lookup"),
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
    backlog = _latest(paired, _backlog, slug=slug)
    if backlog is None:
        figures.append(Figure("Embedding backlog", "unknown", "no sample read it in the last hour"))
    else:
        lag_seconds = (backlog.own.get("embedding") or {}).get("lag_seconds")
        figures.append(
            Figure(
                "Embedding backlog",
                number(backlog.value),
                (f"the oldest waiting for {_duration(lag_seconds)}" if lag_seconds else "none waits")
                + ("" if backlog.newest else f", at {backlog.sample['taken_at']:%H:%M:%S} UTC (unread since)"),
                "warning" if lag_seconds and lag_seconds > EMBEDDING_LAG_LIMIT_SECONDS else "",
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


def _charts(paired: Paired, *, slug: str | None, now: datetime) -> list[SafeString]:
    """The last hour of each figure, one point per sample slot (``None``: no sample then)."""
    slots = int(HISTORY.total_seconds() // SAMPLE_SECONDS)
    step = timedelta(seconds=SAMPLE_SECONDS)
    grid: list[tuple[datetime, tuple[dict[str, Any], dict[str, Any]] | None]] = [
        (now - (slots - 1 - index) * step, None) for index in range(slots)
    ]
    for sample, interval in paired:
        index = slots - 1 - int((now - sample["taken_at"]) // step)
        if 0 <= index < slots:
            grid[index] = (grid[index][0], (sample, interval))

    def series(read: Reader) -> list[tuple[datetime, float | None]]:
        return [(moment, read(_own(found[0]["figures"], slug), found[1]) if found else None) for moment, found in grid]

    charts = []
    if slug is None:
        charts.append(line_chart(series(_depth("persist")), label="Persist queue", unit="waiting"))
        charts.append(line_chart(series(_depth("derived")), label="Derived queue", unit="waiting"))
        p99 = series(_interval("lag_p99"))
        over = any(value is not None and value > LAG_LIMIT_SECONDS for _, value in p99)
        charts.append(line_chart(p99, label="Persist lag p99", unit="s", y_max=LAG_LIMIT_SECONDS, kind="warning" if over else ""))
        charts.append(line_chart(series(_interval("lag_p50")), label="Persist lag p50", unit="s", y_max=LAG_LIMIT_SECONDS))
    charts.append(line_chart(series(_hit_rate_percent), label="Cache hit rate", unit="%", y_max=100))
    charts.append(line_chart(series(_dead_letters_waiting), label="Dead letters waiting"))
    charts.append(line_chart(series(_backlog), label="Embedding backlog", unit="messages"))
    if slug is not None:
        charts.append(line_chart(series(_repairs), label="Awaiting cache repair"))
    return charts


# --- The problems, in words, with what to do: each reader is told only what it can do -------------------


def _problems(
    report: HealthReport,
    *,
    paired: Paired,
    counts: dict[str, int],
    heard: list[Worker],
    now: datetime,
) -> list[Problem]:
    problems: list[Problem] = []
    deployment = report.scope == Scope.DEPLOYMENT
    for engine in report.engines:
        if not engine.ok:
            repairs = counts.get("cache_repairs")
            meanwhile = ENGINE_MEANWHILE[engine.key].format(
                repairs=f"{repairs} so far" if repairs is not None else "counted once PostgreSQL answers"
            )
            fix = ENGINE_FIXES[engine.key] if deployment else ASK_OPERATORS.format(what="bring it back")
            problems.append(
                Problem(
                    severity="error" if report.status == "unavailable" or engine.key == "database" else "warning",
                    text=f"{engine.name} ({engine.setting}) does not answer.",
                    action=f"{fix} {meanwhile}",
                )
            )
    for queue in report.queues:
        if queue.served is False:
            problems.append(_queue_problem(queue, [w for w in heard if queue.name in w.queues], deployment=deployment))
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
    problems += _figure_problems(report, paired=paired, counts=counts, deployment=deployment)
    if report.scope != Scope.ENGINES:
        problems += _sample_problems(report, now=now)
    return problems


def _queue_problem(queue: Queue, heard: list[Worker], *, deployment: bool) -> Problem:
    """A queue nothing consumes, in words: its workers connecting (they said so), or none, with those
    that said they consumed it and left since (the broker counts no consumer on it)."""
    # A tenant's operator reads no queue name, node name or command: the deployment's operators run the workers.
    label = queue.name if deployment else f"the {queue.role} queue"
    waiting = f" ({number(queue.depth)} now)" if queue.depth is not None else ""
    consequence = (
        f"acknowledged writes wait in the queue{waiting} and are not persisted; they are served from Redis meanwhile"
        if queue.role == "persist"
        else f"{queue.purpose} wait in the queue{waiting}; conversations and their windows are not held up"
    )
    connecting = [w for w in heard if w.state == "connecting"]
    if connecting and queue.consumers == 0:
        latest = max(connecting, key=lambda w: w.seen_at)
        return Problem(
            severity="warning",
            text=f"No consumer on {label} at the broker: {len(connecting)} {'worker' if len(connecting) == 1 else 'workers'} of it "
            f"{'says it is' if len(connecting) == 1 else 'say they are'} connecting to the broker (last heard from "
            f"{latest.heard}): {consequence}.",
            action="They connect by themselves once the broker takes them; if this lasts, read their logs (the "
            "broker's address and credentials) or restart them."
            if deployment
            else "They connect by themselves; if this lasts, tell your deployment's operators.",
        )
    text = f"No worker consumes {label}: {consequence}."
    left = [w for w in heard if w.state == "left"]
    if left:
        latest = max(left, key=lambda w: w.seen_at)
        who = (
            ", ".join(f"{w.hostname} (pid {w.pid})" for w in left)
            if deployment
            else ("Its worker" if len(left) == 1 else f"{len(left)} of its workers")
        )
        text += (
            f" {who} said {'it was' if len(left) == 1 else 'they were'} consuming it when last heard from, "
            f"{latest.heard}, and the broker has counted no consumer on it since: stopped without a word (killed, out "
            f"of memory, its host gone) or cut off from the broker. Shown missing after {int(MISSING_AFTER_SECONDS)} s "
            "without a heartbeat."
        )
    return Problem(
        severity="error" if queue.role == "persist" else "warning",
        text=text,
        action="Start one (the Procfile's "
        f"{'worker' if queue.role == 'persist' else 'derived'} process; with make run, restart it):"
        if deployment
        else ASK_OPERATORS.format(what="start one") + " Nothing acknowledged is lost meanwhile.",
        command=queue.start_command if deployment else "",
    )


def _figure_problems(report: HealthReport, *, paired: Paired, counts: dict[str, int], deployment: bool) -> list[Problem]:
    problems: list[Problem] = []
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
        problems.append(_dead_letter_problem(waiting, report.abilities, deployment=deployment))
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
                "what it missed)."
                if deployment
                else ASK_OPERATORS.format(what="start or add the workers that compute them")
                + " The hourly backfill catches up what they missed.",
                command=derived.start_command if deployment else "",
            )
        )
    if paired and not _source(paired).get("multiprocess"):
        counted = f" ({_source(paired).get('process')})" if deployment else ""
        problems.append(
            Problem(
                severity="info",
                text=f"The figures over an interval count the process that takes the samples only{counted}: "
                f"the web processes serve the reads and keep their counts apart, so the cache hit rate has no "
                f"data while reads are served{', and the persist lag is that worker’s' if deployment else ''}.",
                action=f"Set {MULTIPROCESS_SETTING} for every process of the host (the web processes and the workers) "
                "to one empty directory they share, emptied before they start (make run sets it); the samples add "
                "every process up from then on."
                if deployment
                else ASK_OPERATORS.format(what=f"set {MULTIPROCESS_SETTING}, which adds every process's figures up"),
            )
        )
    return problems


def _dead_letter_problem(waiting: int, abilities: Abilities, *, deployment: bool) -> Problem:
    """Dead letters waiting, with what the reader may do about them: the list and its replay action
    when the admin lets them, the command for the deployment's operators, else whom to ask."""
    text = (
        f"{number(waiting)} {'dead letters wait' if waiting != 1 else 'dead letter waits'} for a replay: tasks that "
        "failed for good, kept whole with their error."
    )
    if deployment:
        action = "Fix what made them fail, then replay them from the list (or manage.py replay_dead_letters)."
    elif abilities.dead_letter_replay:
        action = (
            "Read each one's error in the list; once what made it fail is fixed, replay it there (select it, then "
            "“Replay the selected dead letters”). An error of the deployment's (an engine or a worker down) is "
            "its operators' to fix first."
        )
    elif abilities.dead_letter_list:
        action = "Read each one's error in the list. " + ASK_OPERATORS.format(
            what="replay them, once what made them fail is fixed"
        )
    else:
        action = ASK_OPERATORS.format(what="read and replay them")
    show_list = deployment or abilities.dead_letter_list
    return Problem(
        severity="warning",
        text=text,
        action=action,
        link=reverse("admin:conversations_deadletter_changelist") + "?replayed_at__isempty=1" if show_list else "",
        link_text="Dead letters waiting" if show_list else "",
    )


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
        else ASK_OPERATORS.format(what="start them (Celery beat, and a worker of the persist queue)")
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
            "a gap from then and the figures over an interval are those of the last sample that had them.",
            action=action,
            command=command,
        )
    ]


# --- Words ----------------------------------------------------------------------------------------


def _seconds(value: float | None) -> str:
    if value is None:
        return "no data"
    return f"{value * 1000:.0f} ms" if value < 1 else number(round(value, 2), "s")


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
