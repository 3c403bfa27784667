"""The deployment check of the static files (``memoryproject.checks``), in process: a manifest storage
without its manifest, or with one collected from another version of the code, is an error naming
``collectstatic``; the web process refuses to load the application on it."""

import json
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.test import override_settings

from memoryproject.checks import refuse_to_serve_without_static_files, static_manifest

MANIFEST_STORAGE = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"},
}


@pytest.fixture
def static_root(tmp_path: Path):
    with override_settings(STATIC_ROOT=tmp_path, STORAGES=MANIFEST_STORAGE, WHITENOISE_USE_FINDERS=False):
        yield tmp_path


def test_no_manifest_is_an_error_naming_collectstatic_and_the_web_process_refuses_to_serve(static_root):
    [error] = static_manifest()

    assert error.id == "memoryproject.E001"
    assert "staticfiles.json is missing" in error.msg
    assert "python manage.py collectstatic --noinput" in error.hint
    with pytest.raises(ImproperlyConfigured, match="collectstatic --noinput"):
        refuse_to_serve_without_static_files()


def test_a_manifest_collected_from_another_version_is_an_error(static_root):
    call_command("collectstatic", "--noinput", verbosity=0)
    manifest = json.loads((static_root / "staticfiles.json").read_text())
    del manifest["paths"]["admin/css/base.css"]  # a file this code ships that was not collected
    (static_root / "staticfiles.json").write_text(json.dumps(manifest))

    [error] = static_manifest()

    assert error.id == "memoryproject.E002"
    assert "admin/css/base.css" in error.msg


def test_collected_static_files_pass(static_root):
    call_command("collectstatic", "--noinput", verbosity=0)

    assert static_manifest() == []
    refuse_to_serve_without_static_files()


def test_a_storage_without_a_manifest_is_not_checked():
    assert static_manifest() == []  # the test settings serve from the apps' directories
