"""The details screen of one run: a tab per question (what, which kernels, where the host time goes, ...).

Opened with Enter on a results row. It renders the record when opened and re-renders on ``r``
(a run still going keeps changing); it never polls on its own. Each tab scrolls on its own
and is readable at 80x24; 1-7 or Left/Right switch tabs.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static, TabbedContent, TabPane

from tui.app.baselines import baseline_summary
from tui.app.components.details.code import CodeView, code_header
from tui.app.components.details.machine import environment_tab, telemetry_tab
from tui.app.components.details.summary import command_of, error, summary_tab, title
from tui.app.components.details.why import graphs_tab, host_line, host_tab, kernels_tab
from tui.app.layout import NARROW_WIDTH
from tui.engine.artifacts import load_code
from tui.engine.results import RunRecord

__all__ = ["DetailsScreen", "render_details", "render_tab", "TABS"]

#: (id, title) of each tab, in order.
TABS = (("summary", "Summary"), ("kernels", "Kernels"), ("host", "Host time"), ("graphs", "Graphs and breaks"),
        ("code", "Code"), ("telemetry", "Telemetry"), ("environment", "Environment"))  # fmt: skip


def render_tab(record: RunRecord, tab: str, baseline: Sequence[RenderableType] = ()) -> RenderableType:
    """One tab's body for ``record`` (the title and any error head every tab); ``baseline``: the Summary's
    line against the app's baseline, if any."""
    summary = record.summary()
    bodies = {
        "summary": lambda: summary_tab(record, summary, host_line(record), baseline),
        "kernels": lambda: kernels_tab(record),
        "host": lambda: host_tab(record, summary),
        "graphs": lambda: graphs_tab(record),
        "code": lambda: _code_now(record),
        "telemetry": lambda: telemetry_tab(record),
        "environment": lambda: environment_tab(record),
    }
    head = title(record) + (error(record) if tab == "summary" else [])
    return Group(*head, *bodies[tab]())


def _code_now(record: RunRecord) -> list[RenderableType]:
    """The Code tab read on the spot (render_details; the screen reads it in a thread)."""
    listing = load_code(record)
    parts: list[RenderableType] = []
    for index in range(max(1, len(listing.graphs))):
        parts.append(code_header(listing, index))
        if listing.graphs:
            parts.append(listing.graphs[index].code or "")
    return parts


def render_details(record: RunRecord) -> RenderableType:
    """Every tab of ``record`` one after the other (for a copy, a report, or a test)."""
    parts: list[RenderableType] = []
    for tab, heading in TABS:
        parts += [Text(f"\n── {heading} ──", style="bold reverse"), render_tab(record, tab)]
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
        *[Binding(str(number), f"show_tab('{tab}')", heading, show=False)
          for number, (tab, heading) in enumerate(TABS, 1)],
    ]

    def __init__(self, record: RunRecord, tab: str = "summary") -> None:
        super().__init__()
        self.record = record
        """The record shown."""
        self._initial = tab

    def compose(self) -> ComposeResult:
        """A tab per question, each a scrolling body, and the footer."""
        with TabbedContent(initial=self._initial, id="details-tabs"):
            baseline = self._baseline()
            for tab, heading in TABS:
                with TabPane(heading, id=tab):
                    if tab == "code":  # files to read: in a thread, when first shown
                        yield CodeView(self.record, id="code-view")
                        continue
                    with VerticalScroll(id=f"details-{tab}-body", classes="details-body"):
                        yield Static(render_tab(self.record, tab, baseline), id=f"details-{tab}")
        yield Footer()

    def on_mount(self) -> None:
        """Focus the first tab's body so arrow keys scroll it."""
        if (self.active_tab or self._initial) == "code":
            self.query_one(CodeView).load()
        self._focus_body()

    def on_resize(self) -> None:
        """Below 120 columns the footer drops its key padding (as on the main screen)."""
        self.query_one(Footer).compact = self.size.width < NARROW_WIDTH

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
        ids = [tab for tab, _ in TABS]
        self.action_show_tab(ids[(ids.index(self.active_tab) + step) % len(ids)])

    def action_copy_command(self) -> None:
        """Copy the command line that reproduces this run (OSC 52: most terminals, over SSH too)."""
        command = command_of(self.record)
        self.app.copy_to_clipboard(command)
        self.notify(command, title="Copied (if your terminal allows it)", markup=False, timeout=6)

    def action_reload(self) -> None:
        """Re-render every tab from the record's current state."""
        baseline = self._baseline()
        for tab, _ in TABS:
            if tab != "code":  # the code is the compile's and does not change
                self.query_one(f"#details-{tab}", Static).update(render_tab(self.record, tab, baseline))

    def _baseline(self) -> list[RenderableType]:
        return baseline_summary(self.app, self.record)

    def _focus_body(self) -> None:
        # TabbedContent may not have activated its first tab yet when the screen mounts
        for body in self.query(f"#details-{self.active_tab or self._initial}-body"):
            body.focus()
