"""The sampler, run by Celery beat every ``SAMPLE_SECONDS`` (``health-sample`` in
``CELERY_BEAT_SCHEDULE``) on the persist queue, whose workers observe the persist lag.

Not acknowledged late and never retried: a sample lost or late is a gap in the charts, which the
page names, and a sample taken late would be recorded at the wrong time. The beat entry gives it an
expiry for the same reason: samples queued while no worker ran are dropped, not taken all at once.
"""

from celery import shared_task

from console import services

SAMPLE_SECONDS = 30.0


@shared_task(name="console.tasks.health_sample", ignore_result=True)
def health_sample() -> int:
    return services.health_sample_take().pk
