"""The sweep dialog: pick modes x fullgraph x dynamic (and optionally backends, dtypes, precisions).

The dialog previews how many runs the choice expands to (``tui.engine.run.sweep.expand`` drops
the combinations a backend ignores) and dismisses with the choice as keyword arguments for
``expand``, or None when cancelled. On a machine with two GPUs or more it also lists the GPUs
(``"gpus"``: ``cuda:N`` each): the runs are dealt to the checked ones, one run each at once
(none checked: the picker's device).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from collections.abc import Callable, Sequence

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, SelectionList, Static
from textual.widgets.selection_list import Selection

from tui.app.components.marks import MarkedSelectionList
from tui.app.components.picker import DYNAMIC_LABELS
from tui.engine.options import BACKENDS, DTYPES, MODES, PRECISIONS, OptionsError, comma_items
from tui.app.components.key_footer import KeyFooter
from tui.app.components.ordered_input import OrderedInput
from tui.present.cells import wrap_cells

__all__ = ["SweepScreen", "SweepChoice", "SweepPreview", "DEFAULT_SWEEP", "PREVIEW_LINES", "choice_to_expand_kwargs",
           "parse_sizes", "first_sweep"]

SweepChoice = dict[str, list[Any]]
"""``{"modes": [...], "fullgraphs": [...], "dynamics": [...], "backends": [...], "dtypes": [...],
"precisions": [...]}``, and
the dialog's ``"sizes"``, ``"repeat"`` and ``"pythons"`` (A/B interpreters, comma-separated) text (one
item each, or none); ``"gpus"`` (``cuda:N`` each) when the dialog lists GPUs."""

DEFAULT_SWEEP: SweepChoice = {
    "modes": ["default", "reduce-overhead", "max-autotune"],
    "fullgraphs": [False, True],
    "dynamics": ["auto"],
    "backends": [],
    "dtypes": [],
    "precisions": [],
    "sizes": [],
}
"""What the dialog offers the first time (empty backends/dtypes/precisions/sizes: keep the picker's)."""


def first_sweep(device: str) -> SweepChoice:
    """What the dialog offers before any sweep was chosen, for the picker's ``device``: :data:`DEFAULT_SWEEP` on a
    GPU; on the CPU the modes without CUDA graphs, since reduce-overhead and max-autotune run there as the default
    compile and max-autotune-no-cudagraphs do (their CUDA graphs skipped, with a warning): a run each for nothing."""
    if device.startswith("cuda"):
        return dict(DEFAULT_SWEEP)
    return {**DEFAULT_SWEEP, "modes": ["default", "max-autotune-no-cudagraphs"]}

_AXES = ("modes", "fullgraphs", "dynamics", "backends", "dtypes", "precisions")  # the selection lists, in order

PREVIEW_LINES = 3
"""The preview's lines (``#sweep-preview``'s max-height in compile_lab.tcss, at every size): its text is made to
fit them whole, naming fewer configurations where it must (:meth:`SweepPreview.text`)."""


@dataclass(frozen=True)
class SweepPreview:
    """What a sweep choice expands to, for the dialog's preview line; or why it is refused (``problem``)."""

    runs: int = 0
    """The runs it queues (every process of every configuration)."""
    configurations: int = 0
    labels: tuple[str, ...] = ()
    """The first configurations' labels, in queue order (what tells them apart)."""
    notes: tuple[str, ...] = ()
    """After the labels: the processes per configuration, the GPUs."""
    problem: str = ""
    """Why nothing is queued (a refused value, no meaningful combination); shown instead."""

    def text(self, width: int, lines: int = PREVIEW_LINES) -> str:
        """The preview in at most ``lines`` lines of ``width`` columns: the counts and the notes whole, and as many
        of the labels as leave room for them (``+N more`` for the rest)."""
        if self.problem or not self.runs:
            return self.problem
        for shown in range(len(self.labels), -1, -1):
            text = self._text(shown)
            if len(wrap_cells(text, max(width, 1))) <= lines:
                return text
        return text

    def _text(self, shown: int) -> str:
        named = list(self.labels[:shown])
        rest = self.configurations - shown
        if rest > 0:
            named.append(f"+{rest} more" if shown else f"{rest} configuration(s)")
        return f"{self.runs} run(s): " + "; ".join([", ".join(named), *self.notes])


_SEPARATOR = re.compile(r"\s*,\s*|\s+")
"""What separates two values of a sizes list: a comma with spaces around it, or spaces alone."""


def parse_sizes(text: str) -> dict[str, list[str]]:
    """``"n=256,512; batch=16,32"`` -> ``{"n": ["256", "512"], "batch": ["16", "32"]}`` (ValueError if malformed).

    Values stay text: ``expand`` validates and converts them with the workload's parameter specs.
    """
    grid: dict[str, list[str]] = {}
    for part in text.replace("\n", ";").split(";"):
        part = part.strip()
        if not part:
            continue
        name, sep, values = part.partition("=")
        name, values = name.strip(), values.strip()
        if not sep or not name.isidentifier() or not values:
            raise ValueError(f"sizes: {part!r} is not name=v1,v2,... (e.g. n=256,512,1024)")
        # values apart by commas or spaces (``256, 512`` and ``256 512`` too); an empty one (``8,,16``) is refused
        items = _SEPARATOR.split(values)
        if not all(items):
            raise OptionsError("sizes", f"{part!r} has an empty value (allowed: values separated by commas or "
                                        "spaces, none empty)")
        grid[name] = items
    return grid


def choice_to_expand_kwargs(choice: SweepChoice) -> dict[str, Any]:
    """Keyword arguments for ``sweep.expand`` (empty lists dropped; ``expand`` parses the values)."""
    kwargs: dict[str, Any] = {key: list(choice[key]) for key in _AXES if choice.get(key)}
    sizes = " ".join(str(v) for v in choice.get("sizes") or []).strip()
    if sizes:
        kwargs["params_grid"] = parse_sizes(sizes)
    pythons = [python for text in choice.get("pythons") or [] for python in comma_items(str(text), "pythons")]
    if pythons:
        kwargs["pythons"] = pythons
    return kwargs


class SweepScreen(ModalScreen[SweepChoice | None]):
    """Choose the sweep's axes; ctrl+s (or Enter in the sizes field) queues it, Escape cancels."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="sweep.cancel"),
        Binding("ctrl+s", "queue", "Queue sweep", id="sweep.queue"),
    ]

    def __init__(self, initial: SweepChoice | None, preview: Callable[[SweepChoice], SweepPreview],
                 repeat: int | str = 1, keeps: dict[str, str] | None = None,
                 gpus: Sequence[tuple[str, str]] = (), chosen_gpus: Sequence[str] = ()) -> None:
        """``preview(choice)`` says what ``choice`` queues, for the preview under the lists;
        ``repeat`` fills the repeat field (processes per configuration, or auto); ``keeps``: the
        picker's value each list stands for while nothing in it is checked (``{"backends": "inductor"}``);
        ``gpus``: ``(label, "cuda:N")`` of each GPU to offer (a list only with two or more), ``chosen_gpus``
        the ones checked at first (every one for the picker's ``cuda:all``)."""
        super().__init__()
        self.initial = {**DEFAULT_SWEEP, **(initial or {})}
        self.preview = preview
        self.repeat = repeat
        self.gpus = list(gpus) if len(gpus) > 1 else []
        self.chosen_gpus = list(chosen_gpus)
        self.keeps = {key: value for key, value in (keeps or {}).items() if key != "gpus" or self.gpus}
        self._preview = SweepPreview()

    def compose(self) -> ComposeResult:
        """Six selection lists (seven with the GPUs), a preview line and the buttons."""
        init = self.initial
        yield KeyFooter()  # the dialog's own keys, over the screen's beneath it
        with Vertical(classes="dialog sweep-dialog"):
            yield Static("Sweep: each meaningful combination of the checked values is queued. "
                         "Space toggles, tab moves.", markup=False)
            with Horizontal(id="sweep-axes", classes="-with-gpus" if self.gpus else ""):
                yield self._list("modes", "mode", [(m, m) for m in MODES], init["modes"])
                yield self._list("fullgraphs", "fullgraph", [("false", False), ("true", True)], init["fullgraphs"])
                yield self._list("dynamics", "dynamic", [(d, d) for d in DYNAMIC_LABELS], init["dynamics"])
                yield self._list("backends", "backend", [(b, b) for b in BACKENDS], init["backends"])
                yield self._list("dtypes", "dtype", [(d, d) for d in DTYPES], init["dtypes"])
                yield self._list("precisions", "precision", [(p, p) for p in PRECISIONS], init["precisions"])
                if self.gpus:
                    yield self._list("gpus", "GPUs", self.gpus, self.chosen_gpus)
            with Horizontal(id="sweep-inputs"):
                yield OrderedInput(" ".join(str(v) for v in init.get("sizes") or []), id="sweep-sizes", compact=True,
                            placeholder="sizes, e.g. n=256,512",  # whole at 80 columns; the tooltip has the rest
                            tooltip="optional sizes to sweep: name=v1,v2,... (e.g. n=256,512,1024 or "
                                    "batch=16,64; width=256,512: each combination is queued)")
                # Never kept in the config: an interpreter is code (queueing it asks to confirm: tui.app.trust).
                yield OrderedInput("", id="sweep-pythons", compact=True,
                            placeholder="A/B pythons: PATH,PATH (optional), e.g. /venvA/bin/python,/venvB/bin/python",
                            tooltip="interpreters to run every configuration in, interleaved (an A/B of torch builds)")
                yield Static("repeat", id="sweep-repeat-label", markup=False)  # its value alone ("1") says nothing
                yield OrderedInput(str(self.repeat), id="sweep-repeat", compact=True, placeholder="1, K or auto",
                            tooltip="worker processes per configuration, interleaved "
                                    "(auto: more where one process does not settle it)")
            yield Static("", id="sweep-preview", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Queue (ctrl+s)", variant="primary", id="sweep-queue", compact=True)
                yield Button("Cancel (esc)", id="sweep-cancel", compact=True)

    @staticmethod
    def _list(key: str, title: str, items: list[tuple[str, Any]], chosen: list[Any]) -> SelectionList:
        widget: SelectionList = MarkedSelectionList(
            *(Selection(label, value, value in chosen) for label, value in items),
            id=f"sweep-{key}",
            compact=True,
        )
        widget.border_title = title
        return widget

    def on_mount(self) -> None:
        """Show the first preview."""
        self._update_preview()

    def choice(self) -> SweepChoice:
        """The values checked now (and the sizes text)."""
        result: SweepChoice = {
            key: list(self.query_one(f"#sweep-{key}", SelectionList).selected)
            for key in (*_AXES, "gpus") if key != "gpus" or self.gpus
        }
        sizes = self.query_one("#sweep-sizes", Input).value.strip()
        result["sizes"] = [sizes] if sizes else []
        repeat = self.query_one("#sweep-repeat", Input).value.strip()
        result["repeat"] = [repeat] if repeat else []
        pythons = self.query_one("#sweep-pythons", Input).value.strip()
        result["pythons"] = [pythons] if pythons else []
        return result

    @on(SelectionList.SelectedChanged)
    @on(Input.Changed, "#sweep-sizes")
    @on(Input.Changed, "#sweep-repeat")
    @on(Input.Changed, "#sweep-pythons")
    def _changed(self) -> None:
        self._update_preview()

    @on(Input.Submitted, "#sweep-sizes")
    @on(Input.Submitted, "#sweep-repeat")
    def _sizes_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_queue()

    def _update_preview(self) -> None:
        for key, value in self.keeps.items():  # an empty list means the picker's value: say so
            widget = self.query_one(f"#sweep-{key}", SelectionList)
            widget.border_subtitle = "" if widget.selected else f"none: {value}"
        self._preview = self.preview(self.choice())
        self._show_preview()

    def on_resize(self) -> None:
        """The preview fits its width again."""
        self._show_preview()

    def _show_preview(self) -> None:
        widget = self.query_one("#sweep-preview", Static)
        # Before the first layout the preview has no width yet: the dialog's, less its border and padding.
        width = widget.content_region.width or self.app.size.width - 4
        widget.update(self._preview.text(width))

    @on(Button.Pressed, "#sweep-queue")
    def action_queue(self) -> None:
        """Dismiss with the choice."""
        self.dismiss(self.choice())

    @on(Button.Pressed, "#sweep-cancel")
    def action_cancel(self) -> None:
        """Dismiss without queueing."""
        self.dismiss(None)
