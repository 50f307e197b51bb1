"""``compile-lab report``: runs as one self-contained HTML file to share (the ``compile-lab[report]`` extra).

The data come from :mod:`tui.engine.store.report_data` (torch-free, typed rows); this package draws them:
:mod:`~tui.report.plots` (matplotlib, SVG; imported only when a report is made),
:mod:`~tui.report.page` (the HTML, every string escaped), :mod:`~tui.report.colors` (the verdicts'
colours, as the app's). Importing this package loads neither matplotlib nor textual nor torch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tui.engine.store.report_data import ReportData

if TYPE_CHECKING:
    from tui.present.tune_json import StoredAnswer

__all__ = ["render_report", "write_report", "require_matplotlib"]


def require_matplotlib() -> None:
    """Nothing when matplotlib can be imported; else ``MatplotlibMissing`` (an ImportError: the line to print)."""
    from tui.report.plots import load_matplotlib

    load_matplotlib()


def render_report(data: ReportData, answers: Sequence[StoredAnswer | str] = ()) -> str:
    """The report of ``data`` (and the ``answers`` of searches among its runs; a ``tune:`` selection's text where
    the history kept no answer) as one HTML document (MatplotlibMissing without matplotlib)."""
    from tui.report.page import render_page, row_labels
    from tui.report.plots import distribution_svg, forest_svg

    forest = forest_svg(data.rows, row_labels(data.rows)) if data.rows else ""
    distributions = {row.number: distribution_svg(row) for row in data.rows}
    return render_page(data, forest, distributions, answers)


def write_report(data: ReportData, path: str | os.PathLike[str], answers: Sequence[StoredAnswer | str] = ()) -> Path:
    """Render and write atomically to ``path`` (the export rules: ExportTargetError, ExportError)."""
    from tui.engine.store.export import atomic_writer, check_target

    target = check_target(path)
    page = render_report(data, answers)
    with atomic_writer(target, newline=None) as stream:
        stream.write(page)
    return target
