"""The WSGI application the web processes serve (``gunicorn -c gunicorn.conf.py memoryproject.wsgi``).

Before serving, it checks that the static files are collected where production's manifest storage
reads them (``memoryproject.checks``): a process started without ``collectstatic`` fails to boot with
the command to run, instead of answering 500 on the admin's pages.
"""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.local")

application = get_wsgi_application()

from memoryproject.checks import refuse_to_serve_without_static_files  # noqa: E402 - needs Django set up

refuse_to_serve_without_static_files()
