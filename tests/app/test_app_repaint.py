"""The queue pane reaches the terminal when a run ends, crashes or is cancelled (issue 11, item 9).

Root cause: ``QueueView`` kept the running record in ``self._running``, the attribute in which
Textual's ``MessagePump`` keeps whether the widget's message loop runs. With no run (None),
``check_idle()`` saw a pump that "does not run", posted no prompt, the widget never went idle,
so its refresh never reached the screen: the terminal kept ``▶ … done 100%`` until something
else woke the widget (a resize). Snapshots render the widget tree afresh and ``Pilot.pause``
wakes every widget and forces a screen update, so neither could see it; these tests watch what
is written to the terminal (:class:`terminal_model.TerminalModel`) and wait without a pilot.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import pkgutil
import textwrap

import pytest
from textual.app import App
from textual.widget import Widget

import tui.app
import tui.app.components
from app_helpers import fake_runner
from terminal_model import TerminalModel, wait_quietly
from tui.app.components.queue_view import QueueView
from tui.engine.options import RunOptions

IDLE = "idle: press r to run"


@pytest.mark.parametrize("ending", ["done", "crashed", "cancelled"])
async def test_the_queue_pane_is_repainted_when_a_run_ends(make_app, ending, tmp_path):
    # The worker waits at a gate after its first block until the running row is on the terminal:
    # without it a quick run could end before any repaint showed it (CI, 2026-12-03).
    gate = tmp_path / "gate"
    behaviour = {"done": "ok", "crashed": "crash", "cancelled": "hang"}[ending]
    app = make_app(runner=fake_runner(behaviour, FAKE_WORKER_GATE=str(gate)))
    async with app.run_test(size=(160, 48)):
        terminal = TerminalModel(app)
        queue = app.query_one(QueueView)
        app.enqueue([RunOptions(workload="pointwise", iters=20, block_size=10, warmup=0).validated()])
        await wait_quietly(lambda: "▶ pointwise" in terminal.text(queue.region), 20, "the running run on screen")
        if ending == "cancelled":
            app.action_cancel_all()
        else:
            gate.touch()
        await wait_quietly(lambda: app.current is None and IDLE in str(queue.render()), 20, "the widget idle")
        # The widget holds "idle"; the terminal must show it too (the bug: never, until a resize).
        await wait_quietly(lambda: IDLE in terminal.text(queue.region), 2, "'idle' on the terminal")
        assert "▶" not in terminal.text(queue.region)


async def test_the_queue_view_message_loop_stays_running_when_empty(make_app):
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        queue = app.query_one(QueueView)
        await pilot.pause()
        assert queue.is_running is True  # Textual's flag, not a run record or None
        queue.show(None, [])
        assert queue.is_running is True


@functools.cache  # per class: Textual's bases are shared by every widget class
def _stored_self_attributes(cls: type) -> frozenset[str]:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return frozenset()
    return frozenset({
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name) and node.value.id == "self"
    })  # fmt: skip


# Set on purpose: BulkRowTable sets DataTable's row maps at once (issue 11, item 7; table_rows.py), and its
# column map when the columns that tell rows apart change (issue 14 item 1: _set_columns, rows untouched).
INTENDED = {"BulkRowTable": {"_row_locations", "_data", "_require_update_dimensions", "_update_count",
                             "_column_locations"}}


def test_no_widget_of_the_app_overwrites_a_private_textual_attribute():
    """The class of bug behind item 9: a private name of ours that Textual's base classes use too."""
    modules = [
        importlib.import_module(f"{package.__name__}.{info.name}")
        for package in (tui.app, tui.app.components)
        for info in pkgutil.iter_modules(package.__path__)
    ]
    checked, clashes = 0, []
    for module in modules:
        for name, cls in vars(module).items():
            if not (inspect.isclass(cls) and cls.__module__ == module.__name__ and issubclass(cls, (Widget, App))):
                continue
            textual_bases = [base for base in cls.__mro__ if base.__module__.startswith("textual.")]
            textual_names: set[str] = set()
            for base in textual_bases:
                textual_names |= set(vars(base)) | _stored_self_attributes(base)
            ours = {
                attr
                for klass in cls.__mro__
                if klass.__module__.startswith("tui.")
                for attr in _stored_self_attributes(klass) - INTENDED.get(klass.__name__, set())
            }
            checked += 1
            clashes += [
                f"{module.__name__}.{name}.{attr}" for attr in sorted(ours & textual_names) if attr.startswith("_")
            ]
    assert checked >= 10
    assert clashes == []
