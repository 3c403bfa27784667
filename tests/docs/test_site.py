"""The documentation site builds with no warning: no broken link, anchor or page left out of the nav.

``mkdocs build --strict`` (``strict: true`` and the ``validation`` section of ``mkdocs.yml`` turn every
such warning into a failure) into a temporary folder. The README is not part of the site; its links
into ``docs/`` are checked here against the files and their headings' anchors.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

from markdown.extensions.toc import slugify  # mkdocs renders headings with it

from tests.faults import ROOT

DOCS = ROOT / "docs"
LINK = re.compile(r"\]\(([^)#\s]+)(?:#([^)\s]+))?\)")
HEADING = re.compile(r"^#{1,6} (.+?)(?: \{#([\w-]+)\})?$", re.MULTILINE)


def test_the_site_builds_with_no_warning(tmp_path: Path) -> None:
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # the notice about mkdocs 2 is not a warning of ours
    )
    warnings = [line for line in build.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert build.returncode == 0, build.stderr
    assert not warnings, build.stderr
    assert (tmp_path / "architecture" / "index.html").exists()


def anchors_of(page: Path) -> set[str]:
    found = set()
    for title, explicit in HEADING.findall(page.read_text()):
        found.add(explicit or slugify(title, "-"))
    return found


def test_every_link_of_the_readme_leads_to_a_file_and_heading_that_exist() -> None:
    broken = []
    for target, anchor in LINK.findall((ROOT / "README.md").read_text()):
        if target.startswith(("http://", "https://")):
            continue
        path = ROOT / target
        if not path.exists():
            broken.append(target)
        elif anchor and anchor not in anchors_of(path):
            broken.append(f"{target}#{anchor}")
    assert not broken


def test_every_page_of_the_nav_exists_and_every_page_is_in_the_nav() -> None:
    config = (ROOT / "mkdocs.yml").read_text()
    listed = set(re.findall(r":\s*([\w-]+\.md)\s*$", config, flags=re.MULTILINE))
    pages = {path.name for path in DOCS.glob("*.md")}
    assert listed == pages
