"""The repository stands on its own: no tracked file refers to a document kept outside it."""

import subprocess

from tests.faults import ROOT

# Built from pieces so that this file does not name them itself.
OUTSIDE = ["DESIGN" + ".md", "../" + "shared/", "/work/" + "shared"]


def test_no_tracked_file_refers_to_documents_outside_the_repository() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    found = []
    for name in tracked:
        try:
            text = (ROOT / name).read_text()
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue  # binary files (images), or a file deleted in the work tree
        found += [f"{name}: {reference}" for reference in OUTSIDE if reference in text]
    assert not found
