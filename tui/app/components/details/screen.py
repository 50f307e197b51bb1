"""The details screen of one run: a tab per question (what, which kernels, where the host time goes, ...).

Opened with Enter on a results row. It renders the record when opened and re-renders on ``r``
(a run still going keeps changing); it never polls on its own. Each tab scrolls on its own
and is readable at 80x24; its digit key (:data:`TABS` order, from 1) or Left/Right switch tabs.

:data:`TABS` is the one list of tabs: the screen's panes and keys, :func:`render_details` and the
help's paragraph about the details (:func:`tabs_help`) all read it, so a new tab is its body
function and an entry there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static, TabbedContent, TabPane

from tui.app.components.key_footer import KeyFooter
from tui.app.keys import off_footer
from tui.app.baselines import baseline_summary
from tui.app.components.details.code import CodeView, code_header
from tui.app.components.details.machine import environment_tab, telemetry_tab
from tui.app.components.details.summary import command_of, error, summary_tab, title
from tui.app.components.details.why import graphs_tab, host_line, host_tab, kernels_tab
from tui.app.components.notice_line import NoticeLine
from tui.app.layout import NARROW_WIDTH
from tui.engine.explain.artifacts import load_code
from tui.engine.store.results import RunRecord
from tui.engine.measure.summary import RunSummary

__all__ = ["DetailsScreen", "DetailsTab", "render_details", "render_tab", "tab_ids", "tabs_help", "TABS"]

#: A tab's body: the record, its summary and the Summary's line against the app's baseline (if any) in.
Body = Callable[[RunRecord, RunSummary, Sequence[RenderableType]], Sequence[RenderableType]]


@dataclass(frozen=True)
class DetailsTab:
    """One tab of the details screen: its pane id, its title, what the help says of it and its body."""

    id: str
    title: str
    body: Body
    explains: str = ""
    """What the help adds after the title, in brackets ("" for none)."""

    @property
    def help(self) -> str:
        """How the help names the tab: its title, and what it explains if that is not plain."""
        return f"{self.title} ({self.explains})" if self.explains else self.title


def _code_now(record: RunRecord) -> list[RenderableType]:
    """The Code tab read on the spot (render_details; the screen reads it in a thread)."""
    listing = load_code(record)
    parts: list[RenderableType] = []
    for index in range(max(1, len(listing.graphs))):
        parts.append(code_header(listing, index))
        if listing.graphs:
            parts.append(listing.graphs[index].code or "")
    return parts


TABS: tuple[DetailsTab, ...] = (
    DetailsTab("summary", "Summary", lambda r, s, base: summary_tab(r, s, host_line(r), base)),
    DetailsTab("kernels", "Kernels", lambda r, s, base: kernels_tab(r),
               "what ran per call on each side and which eager ops went into which compiled kernel"),
    DetailsTab("host", "Host time", lambda r, s, base: host_tab(r, s)),
    DetailsTab("graphs", "Graphs and breaks", lambda r, s, base: graphs_tab(r)),
    DetailsTab("code", "Code", lambda r, s, base: _code_now(r)),
    DetailsTab("telemetry", "Telemetry", lambda r, s, base: telemetry_tab(r)),
    DetailsTab("environment", "Environment", lambda r, s, base: environment_tab(r)),
)
"""Every tab, in order; the n-th is shown by the key n (so at most 9)."""


def tab_ids() -> list[str]:
    """The tabs' ids, in order."""
    return [tab.id for tab in TABS]


def tabs_help() -> str:
    """The help's sentence about the details: every tab with its key (``1 Summary, 2 Kernels (...), ...``)."""
    named = [f"{number} {tab.help}" for number, tab in enumerate(TABS, 1)]
    listed = ", ".join(named[:-1]) + " and " + named[-1] if len(named) > 1 else named[0]
    return f"Enter on a row opens its details in tabs (its digit or Left/Right switch): {listed}."


def render_tab(record: RunRecord, tab: str, baseline: Sequence[RenderableType] = ()) -> RenderableType:
    """One tab's body for ``record`` (the title and any error head every tab); ``baseline``: the Summary's
    line against the app's baseline, if any."""
    (shown,) = [t for t in TABS if t.id == tab]
    head = title(record) + (error(record) if tab == "summary" else [])
    return Group(*head, *shown.body(record, record.summary(), baseline))


def render_details(record: RunRecord) -> RenderableType:
    """Every tab of ``record`` one after the other (for a copy, a report, or a test)."""
    parts: list[RenderableType] = []
    for tab in TABS:
        parts += [Text(f"\n── {tab.title} ──", style="bold reverse"), render_tab(record, tab.id)]
    return Group(*parts)


class DetailsScreen(Screen):
    """Full-screen details of one run in tabs; Escape or ``q`` goes back, ``r`` re-reads the record."""

    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back", id="details.back"),
        Binding("r", "reload", "Reload", id="details.reload"),
        Binding("y", "copy_command", "Copy command", id="details.copy_command"),
        # priority: the scrolling body would take Left/Right for a sideways scroll nothing here needs
        Binding("left", "switch(-1)", "Tab", key_display="←→", priority=True, id="details.previous_tab"),
        Binding("right", "switch(1)", "Tab", show=False, priority=True, id="details.next_tab"),
        *[Binding(str(number), f"show_tab('{tab.id}')", tab.title, show=False) for number, tab in enumerate(TABS, 1)],
        # The app's keys that are about the results table work here too, off the footer: with them it overflowed
        # 80 columns and its last key's letter showed past the palette's ("^p paletteo").
        *off_footer("sweep", "tune", "rerun", "export", "toggle_history", "sort"),
    ]

    def __init__(self, record: RunRecord, tab: str = "summary") -> None:
        super().__init__()
        self.record = record
        """The record shown."""
        self._initial = tab

    def compose(self) -> ComposeResult:
        """A tab per question, each a scrolling body, the notice line (narrow sizes) and the footer."""
        with TabbedContent(initial=self._initial, id="details-tabs"):
            baseline = self._baseline()
            for tab in TABS:
                with TabPane(tab.title, id=tab.id):
                    if tab.id == "code":  # files to read: in a thread, when first shown
                        yield CodeView(self.record, id="code-view")
                        continue
                    with VerticalScroll(id=f"details-{tab.id}-body", classes="details-body"):
                        yield Static(render_tab(self.record, tab.id, baseline), id=f"details-{tab.id}")
        yield NoticeLine(id="details-notice")
        yield KeyFooter()

    def on_mount(self) -> None:
        """Focus the first tab's body so arrow keys scroll it."""
        if (self.active_tab or self._initial) == "code":
            self.query_one(CodeView).load()
        self._focus_body()

    def on_resize(self) -> None:
        """Below 120 columns the footer drops its key padding (as on the main screen)."""
        self.query_one(KeyFooter).compact = self.size.width < NARROW_WIDTH

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """Keys go to the body of the tab just shown."""
        event.stop()
        if self.active_tab == "code":
            self.query_one(CodeView).load()
        self._focus_body()

    @property
    def active_tab(self) -> str:
        """The id of the tab shown."""
        return self.query_one("#details-tabs", TabbedContent).active

    def tab_content(self, tab: str) -> RenderableType:
        """What the ``tab`` body shows now (for tests and copies)."""
        return self.query_one(f"#details-{tab}", Static).content  # type: ignore[return-value]

    def action_show_tab(self, tab: str) -> None:
        """Show ``tab``."""
        self.query_one("#details-tabs", TabbedContent).active = tab

    def action_switch(self, step: int) -> None:
        """The next (``step`` 1) or previous (-1) tab, wrapping around."""
        ids = tab_ids()
        self.action_show_tab(ids[(ids.index(self.active_tab) + step) % len(ids)])

    def action_copy_command(self) -> None:
        """Copy the command line that reproduces this run (OSC 52: most terminals, over SSH too)."""
        command = command_of(self.record)
        self.app.copy_to_clipboard(command)
        self.notify(command, title="Copied (if your terminal allows it)", markup=False, timeout=6)

    def action_reload(self) -> None:
        """Re-render every tab from the record's current state."""
        baseline = self._baseline()
        for tab in tab_ids():
            if tab != "code":  # the code is the compile's and does not change
                self.query_one(f"#details-{tab}", Static).update(render_tab(self.record, tab, baseline))

    def _baseline(self) -> list[RenderableType]:
        return baseline_summary(self.app, self.record)

    def _focus_body(self) -> None:
        # TabbedContent may not have activated its first tab yet when the screen mounts
        for body in self.query(f"#details-{self.active_tab or self._initial}-body"):
            body.focus()
