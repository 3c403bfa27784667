"""Writes of the console: the workers' heartbeats and the health samples, each kept for a day."""

from datetime import datetime, timedelta

from django.utils import timezone

from console.figures import figures_collect
from console.models import HealthSample, WorkerHeartbeat

# Samples and heartbeats older than this are deleted by the sampler (the page shows the last hour).
KEPT_FOR = timedelta(days=1)


def heartbeat_record(
    *, hostname: str, pid: int, queues: list[str], started_at: datetime, broker_connected: bool | None = None
) -> WorkerHeartbeat:
    """This worker lives now (and holds a connection to the broker, or not): one row per node name,
    refreshed in place."""
    heartbeat, _ = WorkerHeartbeat.objects.update_or_create(
        hostname=hostname,
        defaults={
            "pid": pid,
            "queues": queues,
            "started_at": started_at,
            "seen_at": timezone.now(),
            "broker_connected": broker_connected,
        },
    )
    return heartbeat


def heartbeat_forget(*, hostname: str) -> None:
    """This worker stopped cleanly: it is not missing, it is gone."""
    WorkerHeartbeat.objects.filter(hostname=hostname).delete()


def health_sample_take() -> HealthSample:
    """Record the figures of ``/metrics`` now, and drop what is older than ``KEPT_FOR``."""
    sample = HealthSample.objects.create(taken_at=timezone.now(), figures=figures_collect())
    health_samples_prune(before=sample.taken_at - KEPT_FOR)
    return sample


def health_samples_prune(*, before: datetime) -> int:
    """Delete the samples taken, and the heartbeats last refreshed, before ``before``."""
    deleted, _ = HealthSample.objects.filter(taken_at__lt=before).delete()
    WorkerHeartbeat.objects.filter(seen_at__lt=before).delete()
    return deleted
