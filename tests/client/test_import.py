"""The client package is for agents: it must import where Django is not installed or configured."""

import os
import subprocess
import sys

from tests.faults import ROOT

PROBE = """
import sys
import memory_client, memory_client.http, memory_client.messages, memory_client.langchain, memory_client.langgraph, memory_client.agents, memory_client.store
loaded = sorted(name for name in sys.modules if name == "django" or name.startswith("django.") or name == "rest_framework")
print(",".join(loaded))
"""


def test_the_client_package_imports_without_django() -> None:
    env = {name: value for name, value in os.environ.items() if name != "DJANGO_SETTINGS_MODULE"}
    result = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"the client imported {result.stdout.strip()}"
