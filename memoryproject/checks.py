"""System checks of the deployment that would otherwise surface as 500s on the first page served.

With a manifest storage (production's ``CompressedManifestStaticFilesStorage``), every ``{% static %}``
reads the hashed name from ``staticfiles.json`` in ``STATIC_ROOT``, strictly: without the manifest,
or with one collected from an older version of the code, the admin's login page answers 500
("Missing staticfiles manifest entry"). ``static_manifest`` says so instead, with the command that
fixes it. It is a deployment check (``manage.py check --deploy``), so the commands run on a machine
that serves no page (a worker, ``migrate``) never ask for collected files, and ``memoryproject.wsgi``
runs it before serving: a web process started without ``collectstatic`` fails to boot, loudly.
"""

import os
from typing import Any

from django.conf import settings
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.storage import ManifestFilesMixin
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.core.files.storage import storages

COLLECTSTATIC = "Run `python manage.py collectstatic --noinput` with these settings, then start the web processes."
# What collectstatic leaves out by default.
IGNORED = ["CVS", ".*", "*~"]


def static_manifest(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """An error when the static files storage keeps a manifest and ``STATIC_ROOT`` lacks it, or lacks
    a file this code ships (collected before an upgrade)."""
    try:
        storage = storages.create_storage(settings.STORAGES["staticfiles"])  # reads the manifest now
    except ValueError as error:  # a manifest that is not one
        return [checks.Error(f"The static files manifest cannot be read: {error}", hint=COLLECTSTATIC, id="memoryproject.E001")]
    if not isinstance(storage, ManifestFilesMixin):
        return []
    if storage.read_manifest() is None:
        return [
            checks.Error(
                f"The static files manifest {storage.manifest_name} is missing from STATIC_ROOT ({settings.STATIC_ROOT}): "
                "every page with a stylesheet or a script (the admin, the API docs) would answer 500.",
                hint=COLLECTSTATIC,
                id="memoryproject.E001",
            )
        ]
    shipped = {path.replace(os.sep, "/") for finder in finders.get_finders() for path, _ in finder.list(IGNORED)}
    missing = sorted(shipped - set(storage.hashed_files))
    if missing:
        return [
            checks.Error(
                f"{len(missing)} static files of this code are not in the manifest in STATIC_ROOT "
                f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): it was collected from another version.",
                hint=COLLECTSTATIC,
                id="memoryproject.E002",
            )
        ]
    return []


def refuse_to_serve_without_static_files() -> None:
    """Raise ImproperlyConfigured with the errors of ``static_manifest``, if any: called where the web
    process loads the application, so that gunicorn fails to boot rather than answer 500s."""
    errors = [message for message in static_manifest() if message.is_serious()]
    if errors:
        raise ImproperlyConfigured("\n".join(f"{error.msg}\nHINT: {error.hint}" for error in errors))
