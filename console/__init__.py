"""The operators' console: the deployment's health as one admin page (``admin/health/``).

It combines every app's figures (the engines, the workers by queue, the figures of ``/metrics`` and
their last hour), so it sits in the top layer, under the project itself: it reads the other apps
and none of them reads it. ``memoryproject`` wires it in: the page's URLs (handed the readiness
decision of ``memoryproject.health``) and the workers' heartbeat (``console.heartbeats``).
"""
