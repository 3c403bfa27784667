"""The plots of docs/performance.md are drawn from the committed figures files, as the page says."""

from pathlib import Path

from benchmarks import plots


def test_the_plots_are_drawn_from_the_figures_files(tmp_path: Path) -> None:
    assert plots.main(["--out", str(tmp_path)]) == 0

    drawn = sorted(path.name for path in tmp_path.glob("*.png"))
    assert drawn == ["compare-appends.png", "compare-window-reads.png", "retrieval-recall.png"]
    committed = {path.name for path in (plots.ROOT / "docs" / "img").glob("*.png")}
    assert set(drawn) <= committed
    assert all((tmp_path / name).stat().st_size > 10_000 for name in drawn)
