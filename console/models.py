"""What the health page reads besides the live checks: the workers' heartbeats and the samples of
the figures. Neither is tenant data: a sample holds each tenant's figures under its slug, and only
the page's selectors (``console.selectors``) decide who reads which part."""

from django.db import models


class WorkerHeartbeat(models.Model):
    """A Celery worker's latest word (``console.heartbeats``): written every ``HEARTBEAT_SECONDS`` while
    it runs, removed when it stops cleanly. A row not refreshed for a few beats is a worker lost
    without a word (killed, out of memory, its host gone)."""

    hostname = models.CharField(max_length=255, unique=True)  # the worker's node name (-n)
    pid = models.PositiveIntegerField()
    queues = models.JSONField(default=list)  # the queues it consumes
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField(db_index=True)
    # Whether its consumer held a connection to the broker at that beat (None: not said).
    broker_connected = models.BooleanField(null=True)

    def __str__(self) -> str:
        return self.hostname


class HealthSample(models.Model):
    """The figures of ``/metrics`` at one moment (``console.figures.figures_collect``), taken by the
    sampler task every ``SAMPLE_SECONDS`` and kept for a day: the page's charts and interval figures."""

    taken_at = models.DateTimeField(db_index=True)
    figures = models.JSONField()

    class Meta:
        ordering = ("taken_at",)

    def __str__(self) -> str:
        return f"sample at {self.taken_at:%Y-%m-%d %H:%M:%S}"
