"""What to queue and what to cancel: the picker's options (``r``), a sweep over them (``w``),
the selected row again (``a``); the selected row's run if it runs, else every running run (``x``),
everything (``X``). With ``cuda:all`` in the device field (or GPUs checked in the sweep dialog)
the runs are dealt to a pool of GPUs, one run each at once (:mod:`tui.app.gpu_pool`). ``t`` cycles what the
next runs record besides their numbers: nothing, the profile pass as a Chrome trace, and a
TORCH_TRACE directory too (:data:`TRACE_CHOICES`; the files are in each run's data folder,
:func:`tui.engine.explain.artifacts.artifact_paths`); the palette's "tlparse" makes a run's tlparse report.

Each queueing action validates what it read (a refusal is a notification naming the reason,
and the picker marks the field at fault), then hands the options to
:meth:`~tui.app.trust.TrustActions.queue_confirmed`, which asks first when they hold a setting
that starts a program and was not confirmed in this session (``python``, inductor options: they
come from the saved config or a history row) or when a row from an earlier session is re-run
(its full options are shown), and then calls :meth:`~tui.app.controller.LabController.enqueue`;
cancelling asks the controller. :class:`QueueActions` is a part of the app.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any
from collections.abc import Callable

from textual.app import App

from tui import paths
from tui.app.controller import CANCELLED_WITH_SHIFT_X, TRACE_CHOICES
from tui.engine.options import OptionsError, RunOptions
from tui.present.option_fields import FIELDS_BY_KEY, differing, option_words

if TYPE_CHECKING:
    from tui.app.components.picker import Picker
    from tui.app.components.sweep_dialog import SweepPreview
    from tui.app.controller import LabController
    from tui.app.main_screen import MainScreen
    from tui.app.trust import TrustActions
    from tui.engine.store.results import RunRecord

__all__ = ["QueueActions", "repeat_choice", "TRACE_CHOICES"]


def repeat_choice(choice: dict[str, list[Any]]) -> int | str:
    """The sweep dialog's repeat field (``choice["repeat"]``): processes per configuration or ``"auto"``."""
    from tui.engine.store.repeats import DEFAULT_REPEAT, parse_repeat

    given = [str(v).strip() for v in choice.get("repeat") or [] if str(v).strip()]
    try:
        return parse_repeat(given[0]) if given else DEFAULT_REPEAT
    except ValueError as exc:
        raise OptionsError("repeat", str(exc)) from None


class QueueActions:
    """The app's actions that queue and cancel runs."""

    def __init__(self, app: App[Any], lab: LabController, screen: Callable[[], MainScreen],
                 trust: TrustActions) -> None:
        self.app, self.lab, self.screen, self.trust = app, lab, screen, trust

    @property
    def picker(self) -> Picker:
        """The option picker."""
        return self.screen().picker

    def run(self) -> None:
        """Validate the picker's options and queue them, in the repeat field's processes (refused with the reason);
        with ``cuda:all`` the processes are dealt to every GPU, one each at a time."""
        read = self._validated_picker_options()
        if read is None:
            return
        options, pool, repeats = read
        self.trust.queue_confirmed([options], "run", source=self._config_source(), repeats=repeats, pool=pool)

    def _config_source(self) -> str:
        """Where the picker's options without a field come from: the saved config."""
        return f"the saved config {self.lab.config_path or paths.config_file()}"

    def split_pool(self, options: RunOptions,
                   device: str | None = None) -> tuple[RunOptions, tuple[str, ...]]:
        """``options`` on ``device`` (default: their own) as run options and a pool of GPUs: ``cuda:all`` or a
        GPU list becomes device ``cuda`` and the GPUs (:func:`tui.app.gpu_pool.split_device`); OptionsError
        naming ``device`` when the machine does not have them."""
        from tui.app.gpu_pool import split_device

        device, pool = split_device(options.device if device is None else device, len(self.picker.gpu_devices))
        return dataclasses.replace(options, device=device), pool

    def check_pool_kinds(self, pool: tuple[str, ...], repeats: int | str) -> int | str:
        """A pool of several GPU kinds: OptionsError when one row's processes would mix kinds, else a notice that
        rows may compare different hardware (:func:`tui.engine.runner.wiring.plan_pools`, the CLI's rule).
        Returns the repeats to queue with (``auto`` on several kinds: 1)."""
        from tui.app.components.gpu_pane import GpuPane
        from tui.app.gpu_pool import pool_names
        from tui.engine.runner import wiring

        if len(pool) < 2:
            return repeats
        plan = wiring.plan_pools(pool, pool_names(pool, self.app.query_one(GpuPane).snapshots), repeats)
        note = plan.note
        if note:
            self.app.notify(note[0].upper() + note[1:].replace("--each-gpu-kind", "the CLI's --each-gpu-kind") + ".",
                        title="GPU kinds", severity="warning", markup=False)
        return plan.repeats

    def _validated_picker_options(self) -> tuple[RunOptions, tuple[str, ...], int | str] | None:
        """The picker's options, validated, their pool of GPUs (empty without ``cuda:all``) and the repeats to
        queue with; None when refused. The config keeps them as the picker shows them (``cuda:all`` stays)."""
        picker = self.picker
        try:
            raw = picker.current_options()
            options, pool = self.split_pool(raw)
            options = options.validated()
            repeat = picker.current_repeat()
            repeats = self.check_pool_kinds(pool, repeat)
        except OptionsError as exc:
            picker.mark_invalid(exc)
            self.app.notify(str(exc), title="Run refused", severity="error", markup=False)
            return None
        picker.clear_invalid()
        self.lab.config.options, self.lab.config.repeat = raw, repeat
        self.lab.save_config()
        return options, pool, repeats

    def rerun(self) -> None:
        """Queue the selected row's options again; a row from an earlier session shows them first."""
        run_id = self.screen().table.selected_run_id
        record = self.lab.records.get(run_id) if run_id else None
        if record is None:
            self.app.notify("Select a row first.", severity="information")
            return
        try:
            options = record.options.validated()
        except OptionsError as exc:
            self.app.notify(str(exc), title="Re-run refused", severity="error", markup=False)
            return
        from tui.engine.store.repeats import DEFAULT_REPEAT

        # A group again in as many processes; a lone run under the default (auto: more if launch-bound).
        count = len(self.lab.group_members(record.run_id))
        repeats: int | str = count if count > 1 else DEFAULT_REPEAT
        if any(r is record for r in self.lab.session.records):  # run in this session: nothing new to show
            self.trust.queue_confirmed([options], "rerun", source="an earlier run of this session", repeats=repeats)
        else:
            where = getattr(self.lab.history, "path", None)
            source = "an earlier session" + (f" (the history {where})" if where else "")
            self.trust.queue_confirmed([options], "rerun", source=source, show=options, repeats=repeats)

    def sweep(self) -> None:
        """Open the sweep dialog for the picker's options (with two GPUs or more, a list of the GPUs to use)."""
        try:
            base = self.picker.current_options()
            options, pool = self.split_pool(base)
            options.validated()
            repeat = self.picker.current_repeat()
        except OptionsError as exc:
            self.picker.mark_invalid(exc)
            self.app.notify(str(exc), title="Sweep refused", severity="error", markup=False)
            return
        from tui.app.components.sweep_dialog import SweepScreen, first_sweep
        from tui.app.gpu_pool import visible_gpus
        from tui.present.option_fields import short_device

        gpus = self.picker.gpu_devices[:visible_gpus(len(self.picker.gpu_devices))]  # the ones cuda:N can name
        # what an unchecked list stands for
        keeps = {"backends": base.backend, "dtypes": base.dtype, "precisions": base.precision}
        if len(gpus) > 1:
            keeps["gpus"] = short_device(base.device)
        initial = {**first_sweep(base.device), **self.lab.config.sweep}  # a saved choice names its lists
        self.app.push_screen(SweepScreen(initial, lambda choice: self._sweep_preview(base, choice), repeat=repeat,
                                         keeps=keeps, gpus=gpus, chosen_gpus=list(pool)),
                             callback=lambda choice: self._sweep_chosen(base, choice))

    def _sweep_base(self, base: RunOptions,
                    choice: dict[str, list[Any]]) -> tuple[RunOptions, tuple[str, ...]]:
        """The sweep's base options and pool: the GPUs checked in the dialog, else the picker's device."""
        gpus = sorted({str(gpu) for gpu in choice.get("gpus") or []}, key=lambda gpu: int(gpu.rpartition(":")[2] or 0))
        return self.split_pool(base, ",".join(gpus) if gpus else None)

    def sweep_options(self, base: RunOptions, choice: dict[str, list[Any]]) -> list[RunOptions]:
        """The validated options a sweep choice expands to (OptionsError for a bad combination)."""
        from tui.app.components.sweep_dialog import choice_to_expand_kwargs
        from tui.engine.run.sweep import expand

        expanded = expand(self._sweep_base(base, choice)[0], **choice_to_expand_kwargs(choice))
        return [options.validated() for options in expanded]

    def _sweep_preview(self, base: RunOptions, choice: dict[str, list[Any]]) -> SweepPreview:
        from tui.app.components.sweep_dialog import SweepPreview

        try:
            options = self.sweep_options(base, choice)
            repeats = repeat_choice(choice)
            pool = self._sweep_base(base, choice)[1]
        except (OptionsError, ValueError) as exc:
            return SweepPreview(problem=f"refused: {exc}")
        if not options:
            return SweepPreview(problem="no meaningful combination: check at least one value per axis")
        # What tells the configurations apart comes first (four at most; the dialog names fewer where they do
        # not fit its lines), then the processes and the GPUs.
        differs = differing(options)
        hidden = tuple(key for key in FIELDS_BY_KEY if key not in differs)
        labels = tuple(" ".join(option_words(o, differs, skip=hidden)) if differs else o.label() for o in options[:4])
        notes = []
        if repeats == "auto":
            notes.append("1 process each, more where one does not settle it (auto)")
        elif repeats != 1:
            notes.append(f"{len(options)} configurations, {repeats} processes each")
        if pool:
            notes.append(f"on {len(pool)} GPUs at once")
        runs = len(options) * (1 if repeats == "auto" else int(repeats))
        return SweepPreview(runs, len(options), labels, tuple(notes))

    def _sweep_chosen(self, base: RunOptions, choice: dict[str, list[Any]] | None) -> None:
        if choice is None:
            return
        self.lab.config.sweep = {key: value for key, value in choice.items()
                                 if key not in ("repeat", "pythons", "gpus")}
        from tui.app.components.sweep_dialog import choice_to_expand_kwargs

        # the interpreters typed in the dialog come from the user now: checked here, and not asked about; the
        # config's are asked about first, and never started before the answer (not even to check them)
        try:
            typed = set(choice_to_expand_kwargs(choice).get("pythons", ()))
            options = self.sweep_options(base, choice)
            chosen = repeat_choice(choice)
            pool = self._sweep_base(base, choice)[1]
            _check_interpreters(sorted(typed))
            repeats = self.check_pool_kinds(pool, chosen)
        except (OptionsError, ValueError) as exc:
            self.app.notify(str(exc), title="Sweep refused", severity="error", markup=False)
            return
        if not options:
            self.app.notify("The sweep has no meaningful combination.", title="Sweep", severity="warning")
            return
        self.lab.config.options, self.lab.config.repeat = base, chosen
        self.lab.save_config()
        self.lab.confirmed_code.update(("python", o.python) for o in options if o.python and o.python in typed)
        where = f" over {len(pool)} GPUs" if pool else ""
        def queued(records: list[RunRecord]) -> None:
            self.app.notify(f"Queued {len(records)} run(s){where}.", title="Sweep", markup=False)

        self.trust.queue_confirmed(options, "sweep", source=self._config_source(), repeats=repeats, pool=pool,
                                   then=queued)

    def cycle_trace(self) -> None:
        """Cycle what the next runs record: no traces, the Chrome trace, the Chrome trace and TORCH_TRACE."""
        self.app.notify(self.lab.cycle_trace(), title="Traces", markup=False, timeout=8)

    def tlparse(self) -> None:
        """Make the selected run's tlparse report (off the UI thread) and say where it is, or why not."""
        run_id = self.screen().table.selected_run_id
        record = self.lab.records.get(run_id) if run_id else None
        if record is None:
            self.app.notify("Select a row first.", severity="information")
            return

        def make() -> None:
            from tui.engine.explain.tlparse import run_tlparse

            result = run_tlparse(record)
            message = f"Report: {result.report}" if result.report else f"No report: {result.why}"
            self.app.call_from_thread(self.app.notify, message, title="tlparse", markup=False, timeout=15,
                                  severity="information" if result.report else "warning")

        self.app.run_worker(make, thread=True, group="tlparse", exit_on_error=False, description="tlparse")

    def cancel_current(self) -> None:
        """Cancel the selected row's run when it is running, else every running run (several at once with a
        pool of GPUs); the queue goes on. A cancelled run's worker process group is killed."""
        if not self.lab.session.running:
            self.app.notify("No run is active.", severity="information")
            return
        running, chosen = self.lab.cancel_running(self.screen().table.selected_run_id)
        if not chosen and running > 1:
            self.app.notify(f"Cancelled the {running} running runs; the queue goes on (X cancels it too).",
                            markup=False)

    def cancel_all(self) -> None:
        """Cancel every running run and drop every queued one."""
        dropped, running = self.lab.session.cancel_all(CANCELLED_WITH_SHIFT_X)
        if not dropped and not running:
            self.app.notify("Nothing to cancel.", severity="information")
        elif dropped:
            self.app.notify(f"Cancelled {dropped} queued run(s).", markup=False)
        self.screen().mark_dirty(None)

    def toggle_serial(self) -> None:
        """One run at a time over a pool of GPUs (the CLI's ``--serial``), or one per GPU at once again."""
        serial = self.lab.toggle_serial()
        self.app.notify("One run at a time from now on, even over several GPUs: a launch-bound model's host time "
                        "has the host to itself." if serial else "One run per GPU at once again (cuda:all).",
                        title="Serial" if serial else "Parallel", markup=False)


def _check_interpreters(pythons: list[str]) -> None:
    """The interpreters typed in the sweep dialog (one, or an A/B's two) each a Python with torch (OptionsError
    naming ``--python``), as the CLI checks."""
    if pythons:
        from tui.engine.run.ab import check_interpreter

        for python in pythons:
            check_interpreter(python)
