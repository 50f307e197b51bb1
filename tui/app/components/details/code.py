"""The details screen's Code tab: inductor's generated code, one graph at a time, highlighted and scrollable.

The code is read from the run's data folder (:func:`tui.engine.explain.artifacts.load_code`) in a thread
the first time the tab is shown, never on the UI thread; ``[`` and ``]`` step through the graphs.
Under the code: where the run's files are (the Chrome trace, TORCH_TRACE, tlparse's report).
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from tui.engine.explain.artifacts import ArtifactPaths, CodeListing, GraphCode, artifact_paths, format_bytes, load_code
from tui.engine.store.results import RunRecord

__all__ = ["CodeView", "code_header", "files_text", "MAX_SHOWN_LINES"]

#: Lines of one graph's code highlighted on screen; the rest is in the file named under it.
MAX_SHOWN_LINES = 4000


def code_header(listing: CodeListing, index: int) -> Text:
    """``graph 1 of 3: graph 0 (0/0, 0_inference), 12.3 kB, 2 kernel(s)`` and why code is missing, if it is."""
    text = Text()
    if listing.graphs:
        graph = listing.graphs[index]
        text.append(f"graph {index + 1} of {len(listing.graphs)}: ", style="bold")
        text.append(f"{graph.name}, {format_bytes(graph.size_bytes)}, {graph.kernel_count} kernel(s)")
        if graph.truncated:
            text.append(", cut at the cap", style="yellow")
    if listing.why:
        text.append(("\n" if listing.graphs else "") + listing.why, style="dim")
    return text


def _code(graph: GraphCode) -> RenderableType:
    if graph.code is None:
        return Text("this graph's code could not be read", style="dim")
    lines = graph.code.splitlines()
    shown = "\n".join(lines[:MAX_SHOWN_LINES])
    syntax = Syntax(shown, "python", line_numbers=True, word_wrap=False, theme="ansi_dark", indent_guides=False)
    if len(lines) <= MAX_SHOWN_LINES:
        return syntax
    return Group(syntax, Text(f"… {len(lines) - MAX_SHOWN_LINES} more lines in the file below", style="dim"))


def files_text(paths: ArtifactPaths) -> Text:
    """Where the run's files are on disk (those that exist), and what is gone (pruned or deleted)."""
    text = Text()
    rows = (("generated code", paths.code), ("profile trace (ui.perfetto.dev)", paths.trace),
            ("TORCH_TRACE logs (tlparse)", paths.torch_trace), ("tlparse report", paths.tlparse_report))
    for label, path in rows:
        if path:
            text.append(f"\n{label}: ", style="bold")
            text.append(path)
    if paths.gone:
        text.append(f"\ngone from disk: {', '.join(paths.gone)}", style="yellow")
        if paths.pruned is not None:
            text.append(f" (compile-lab prune, {paths.pruned.pruned_at})", style="dim")
    return Text("\nFiles", style="bold underline") + text if text.plain else text


class CodeView(Vertical):
    """The Code tab's body: a header line, the highlighted code of one graph, and the run's files."""

    # One footer key for both (as ←→ Tab): two took 25 columns, and at 80 the footer lost x's label and f1 Help.
    BINDINGS = [
        Binding("left_square_bracket", "step(-1)", "Graph", key_display="[ ]", id="code.previous"),
        Binding("right_square_bracket", "step(1)", "Next graph", show=False, id="code.next"),
    ]

    graph: reactive[int] = reactive(0, init=False)
    """The index of the graph shown."""

    def __init__(self, record: RunRecord, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.record = record
        self.listing: CodeListing | None = None
        """The run's code once loaded (None before)."""
        self._paths: ArtifactPaths | None = None

    def compose(self) -> ComposeResult:
        """Header, code, files."""
        yield Static(Text("reading the generated code…", style="dim"), id="code-header")
        with VerticalScroll(id="details-code-body", classes="details-body"):
            yield Static("", id="details-code")
            yield Static("", id="code-files")

    def load(self) -> None:
        """Read the code once (the first time the tab is shown)."""
        if self.listing is None:
            self._read()

    @work(thread=True, exclusive=True, group="code")
    def _read(self) -> None:
        listing, paths = load_code(self.record), artifact_paths(self.record)
        self.app.call_from_thread(self._show, listing, paths)

    def _show(self, listing: CodeListing, paths: ArtifactPaths) -> None:
        self.listing, self._paths = listing, paths
        self.query_one("#code-files", Static).update(files_text(paths))
        self._draw()

    def watch_graph(self) -> None:
        """Show the graph chosen."""
        self._draw()

    def _draw(self) -> None:
        listing = self.listing
        if listing is None:
            return
        self.query_one("#code-header", Static).update(code_header(listing, self.graph))
        body = _code(listing.graphs[self.graph]) if listing.graphs else Text("")
        self.query_one("#details-code", Static).update(body)
        self.query_one("#details-code-body", VerticalScroll).scroll_home(animate=False)

    def action_step(self, step: int) -> None:
        """The previous (-1) or next (1) graph, wrapping around."""
        if self.listing is not None and self.listing.graphs:
            self.graph = (self.graph + step) % len(self.listing.graphs)
