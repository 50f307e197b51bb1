"""What to queue and what to cancel: the picker's options (``r``), a sweep over them (``w``),
the selected row again (``a``); the selected row's run if it runs, else every running run (``x``),
everything (``X``). With ``cuda:all`` in the device field (or GPUs checked in the sweep dialog)
the runs are dealt to a pool of GPUs, one run each at once (:mod:`tui.app.gpu_pool`). ``t`` cycles what the
next runs record besides their numbers: nothing, the profile pass as a Chrome trace, and a
TORCH_TRACE directory too (:data:`TRACE_CHOICES`; the files are in each run's data folder,
:func:`tui.engine.artifacts.artifact_paths`); the palette's "tlparse" makes a run's tlparse report.

Each queueing action validates what it read (a refusal is a notification naming the reason,
and the picker marks the field at fault), then hands the options to
:meth:`~tui.app.trust.TrustActions.queue_confirmed`, which asks first when they hold a setting
that starts a program and was not confirmed in this session (``python``, inductor options: they
come from the saved config or a history row) or when a row from an earlier session is re-run
(its full options are shown), and then calls :meth:`~tui.app.app.CompileLabApp.enqueue`;
cancelling asks the run session. :class:`QueueActions` is mixed into the app.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Sequence

from tui import paths
from tui.engine.options import OptionsError, RunOptions

if TYPE_CHECKING:
    from tui.app.app import CompileLabApp
    from tui.engine.results import RunRecord

__all__ = ["QueueActions", "repeat_choice", "TRACE_CHOICES"]

TRACE_CHOICES = ("off", "trace", "trace+torch_trace")
"""What ``t`` makes the next runs record: nothing more, the Chrome trace, the Chrome trace and TORCH_TRACE."""
_TRACE_NOTES = {
    "off": "The next runs record no traces.",
    "trace": "The next runs write the profile pass as a Chrome trace (trace.json in each run's data folder; "
             "open it in ui.perfetto.dev). t again: TORCH_TRACE too.",
    "trace+torch_trace": "The next runs also keep a TORCH_TRACE directory for tlparse (each starts a fresh "
                         "worker; its compile time includes torch's structured logging). t again: off.",
}


def repeat_choice(choice: dict[str, list[Any]]) -> int | str:
    """The sweep dialog's repeat field (``choice["repeat"]``): processes per configuration or ``"auto"``."""
    from tui.engine.repeats import DEFAULT_REPEAT, parse_repeat

    given = [str(v).strip() for v in choice.get("repeat") or [] if str(v).strip()]
    try:
        return parse_repeat(given[0]) if given else DEFAULT_REPEAT
    except ValueError as exc:
        raise OptionsError("repeat", str(exc)) from None


class QueueActions:
    """The app's actions that queue and cancel runs (a mixin of :class:`~tui.app.app.CompileLabApp`)."""

    def action_run(self: CompileLabApp) -> None:
        """Validate the picker's options and queue them, in the repeat field's processes (refused with the reason);
        with ``cuda:all`` the processes are dealt to every GPU, one each at a time."""
        read = self._validated_picker_options()
        if read is None:
            return
        options, pool, repeats = read
        self.queue_confirmed([options], "run", source=self._config_source(), repeats=repeats, pool=pool)

    def _config_source(self: CompileLabApp) -> str:
        """Where the picker's options without a field come from: the saved config."""
        return f"the saved config {self.config_path or paths.config_file()}"

    def split_pool(self: CompileLabApp, options: RunOptions,
                   device: str | None = None) -> tuple[RunOptions, tuple[str, ...]]:
        """``options`` on ``device`` (default: their own) as run options and a pool of GPUs: ``cuda:all`` or a
        GPU list becomes device ``cuda`` and the GPUs (:func:`tui.app.gpu_pool.split_device`); OptionsError
        naming ``device`` when the machine does not have them."""
        from tui.app.gpu_pool import split_device

        device, pool = split_device(options.device if device is None else device, len(self.picker.gpu_devices))
        return dataclasses.replace(options, device=device), pool

    def check_pool_kinds(self: CompileLabApp, pool: tuple[str, ...], repeats: int | str) -> int | str:
        """A pool of several GPU kinds: OptionsError when one row's processes would mix kinds, else a notice that
        rows may compare different hardware (:func:`tui.engine.placement.check_kinds`, the CLI's rule).
        Returns the repeats to queue with (``auto`` on several kinds: 1)."""
        from tui.app.components.gpu_pane import GpuPane
        from tui.app.gpu_pool import pool_names
        from tui.engine.placement import check_kinds, kinds_of, repeats_for_kinds

        if len(pool) < 2:
            return repeats
        kinds = kinds_of(pool, pool_names(pool, self.query_one(GpuPane).snapshots))
        note = check_kinds(kinds, repeats)
        if note:
            self.notify(note[0].upper() + note[1:].replace("--each-gpu-kind", "the CLI's --each-gpu-kind") + ".",
                        title="GPU kinds", severity="warning", markup=False)
        return repeats_for_kinds(kinds, repeats)

    def _validated_picker_options(self: CompileLabApp) -> tuple[RunOptions, tuple[str, ...], int | str] | None:
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
            self.notify(str(exc), title="Run refused", severity="error", markup=False)
            return None
        picker.clear_invalid()
        self.config.options, self.config.repeat = raw, repeat
        self._save_config()
        return options, pool, repeats

    def action_rerun(self: CompileLabApp) -> None:
        """Queue the selected row's options again; a row from an earlier session shows them first."""
        run_id = self.table.selected_run_id
        record = self.records.get(run_id) if run_id else None
        if record is None:
            self.notify("Select a row first.", severity="information")
            return
        try:
            options = record.options.validated()
        except OptionsError as exc:
            self.notify(str(exc), title="Re-run refused", severity="error", markup=False)
            return
        from tui.engine.repeats import DEFAULT_REPEAT

        # A group again in as many processes; a lone run under the default (auto: more if launch-bound).
        count = len(self.group_members(run_id))
        repeats: int | str = count if count > 1 else DEFAULT_REPEAT
        if any(r is record for r in self.session.records):  # run in this session: nothing new to show
            self.queue_confirmed([options], "rerun", source="an earlier run of this session", repeats=repeats)
        else:
            where = getattr(self.history, "path", None)
            source = "an earlier session" + (f" (the history {where})" if where else "")
            self.queue_confirmed([options], "rerun", source=source, show=options, repeats=repeats)

    def action_sweep(self: CompileLabApp) -> None:
        """Open the sweep dialog for the picker's options (with two GPUs or more, a list of the GPUs to use)."""
        try:
            base = self.picker.current_options()
            options, pool = self.split_pool(base)
            options.validated()
            repeat = self.picker.current_repeat()
        except OptionsError as exc:
            self.picker.mark_invalid(exc)
            self.notify(str(exc), title="Sweep refused", severity="error", markup=False)
            return
        from tui.app.components.sweep_dialog import SweepScreen
        from tui.app.gpu_pool import visible_gpus
        from tui.present.option_fields import short_device

        gpus = self.picker.gpu_devices[:visible_gpus(len(self.picker.gpu_devices))]  # the ones cuda:N can name
        # what an unchecked list stands for
        keeps = {"backends": base.backend, "dtypes": base.dtype, "precisions": base.precision}
        if len(gpus) > 1:
            keeps["gpus"] = short_device(base.device)
        self.push_screen(SweepScreen(self.config.sweep, lambda choice: self._sweep_preview(base, choice), repeat=repeat,
                                     keeps=keeps, gpus=gpus, chosen_gpus=list(pool)),
                         callback=lambda choice: self._sweep_chosen(base, choice))

    def _sweep_base(self: CompileLabApp, base: RunOptions,
                    choice: dict[str, list[Any]]) -> tuple[RunOptions, tuple[str, ...]]:
        """The sweep's base options and pool: the GPUs checked in the dialog, else the picker's device."""
        gpus = sorted({str(gpu) for gpu in choice.get("gpus") or []}, key=lambda gpu: int(gpu.rpartition(":")[2] or 0))
        return self.split_pool(base, ",".join(gpus) if gpus else None)

    def sweep_options(self: CompileLabApp, base: RunOptions, choice: dict[str, list[Any]]) -> list[RunOptions]:
        """The validated options a sweep choice expands to (OptionsError for a bad combination)."""
        from tui.app.components.sweep_dialog import choice_to_expand_kwargs
        from tui.engine.sweep import expand

        expanded = expand(self._sweep_base(base, choice)[0], **choice_to_expand_kwargs(choice))
        return [options.validated() for options in expanded]

    def _sweep_preview(self: CompileLabApp, base: RunOptions, choice: dict[str, list[Any]]) -> tuple[int, str]:
        try:
            options = self.sweep_options(base, choice)
            repeats = repeat_choice(choice)
            pool = self._sweep_base(base, choice)[1]
        except (OptionsError, ValueError) as exc:
            return 0, f"refused: {exc}"
        if not options:
            return 0, "no meaningful combination: check at least one value per axis"
        labels = ", ".join(o.label() for o in options[:4])
        more = f", +{len(options) - 4} more" if len(options) > 4 else ""
        where = f" on {len(pool)} GPUs at once" if pool else ""
        from tui.engine.repeats import AUTO, may_grow

        if repeats == AUTO and not pool and not any(may_grow(o) for o in options):
            repeats = 1  # auto gives a CPU configuration one process (none can be launch-bound)
        if repeats == 1:
            return len(options), f"{len(options)} configurations{where}: {labels}{more}" if pool else labels + more
        each = "1 process each, more for launch-bound ones (auto)" if repeats == "auto" else f"{repeats} processes each"
        return (len(options) * (1 if repeats == "auto" else int(repeats)),
                f"{len(options)} configurations, {each}{where}: {labels}{more}")

    def _sweep_chosen(self: CompileLabApp, base: RunOptions, choice: dict[str, list[Any]] | None) -> None:
        if choice is None:
            return
        self.config.sweep = {key: value for key, value in choice.items() if key not in ("repeat", "pythons", "gpus")}
        try:
            options = self.sweep_options(base, choice)
            chosen = repeat_choice(choice)
            pool = self._sweep_base(base, choice)[1]
            _check_interpreters(options)
            repeats = self.check_pool_kinds(pool, chosen)
        except (OptionsError, ValueError) as exc:
            self.notify(str(exc), title="Sweep refused", severity="error", markup=False)
            return
        if not options:
            self.notify("The sweep has no meaningful combination.", title="Sweep", severity="warning")
            return
        self.config.options, self.config.repeat = base, chosen
        self._save_config()
        where = f" over {len(pool)} GPUs" if pool else ""
        self.queue_confirmed(options, "sweep", source=self._config_source(), repeats=repeats, pool=pool,
                             then=lambda records: self.notify(f"Queued {len(records)} run(s){where}.", title="Sweep",
                                                              markup=False))  # fmt: skip

    def action_cycle_trace(self: CompileLabApp) -> None:
        """Cycle what the next runs record: no traces, the Chrome trace, the Chrome trace and TORCH_TRACE."""
        self.trace_next = TRACE_CHOICES[(TRACE_CHOICES.index(self.trace_next) + 1) % len(TRACE_CHOICES)]
        self.notify(_TRACE_NOTES[self.trace_next], title="Traces", markup=False, timeout=8)

    def traced(self: CompileLabApp, options_list: Sequence[RunOptions]) -> list[RunOptions]:
        """``options_list`` with the traces ``t`` asked for (a run without the profile pass gets no Chrome trace)."""
        if self.trace_next == "off":
            return list(options_list)
        torch_trace = self.trace_next == "trace+torch_trace"
        return [dataclasses.replace(o, trace=o.trace or o.profile, torch_trace=o.torch_trace or torch_trace)
                for o in options_list]

    def action_tlparse(self: CompileLabApp) -> None:
        """Make the selected run's tlparse report (off the UI thread) and say where it is, or why not."""
        run_id = self.table.selected_run_id
        record = self.records.get(run_id) if run_id else None
        if record is None:
            self.notify("Select a row first.", severity="information")
            return

        def make() -> None:
            from tui.engine.tlparse import run_tlparse

            result = run_tlparse(record)
            message = f"Report: {result.report}" if result.report else f"No report: {result.why}"
            self.call_from_thread(self.notify, message, title="tlparse", markup=False, timeout=15,
                                  severity="information" if result.report else "warning")

        self.run_worker(make, thread=True, group="tlparse", exit_on_error=False, description="tlparse")

    def action_cancel_current(self: CompileLabApp) -> None:
        """Cancel the selected row's run when it is running, else every running run (several at once with a
        pool of GPUs); the queue goes on. A cancelled run's worker process group is killed."""
        lanes = self._running_lanes()
        if not lanes:
            self.notify("No run is active.", severity="information")
            return
        selected = self.table.selected_run_id
        members = {record.run_id for record in self.group_members(selected)} if selected else set()
        chosen = [lane for lane, record in lanes.items() if record.run_id in members or record.group_id == selected]
        for lane in chosen or lanes:
            self.session.cancel_running(lane)
        if not chosen and len(lanes) > 1:
            self.notify(f"Cancelled the {len(lanes)} running runs; the queue goes on (X cancels it too).", markup=False)

    def _running_lanes(self: CompileLabApp) -> dict[str, RunRecord]:
        return {lane: unit.record for lane, unit in self.session.running.items()}

    def action_cancel_all(self: CompileLabApp) -> None:
        """Cancel every running run and drop every queued one."""
        dropped, running = self.session.cancel_all()
        if not dropped and not running:
            self.notify("Nothing to cancel.", severity="information")
        elif dropped:
            self.notify(f"Cancelled {dropped} queued run(s).", markup=False)
        self.main_screen.mark_dirty(None)

    def action_toggle_serial(self: CompileLabApp) -> None:
        """One run at a time over a pool of GPUs (the CLI's ``--serial``), or one per GPU at once again."""
        serial = self.session.max_running != 1
        self.session.set_max_running(1 if serial else None)
        self.notify("One run at a time from now on, even over several GPUs: a launch-bound model's host time "
                    "has the host to itself." if serial else "One run per GPU at once again (cuda:all).",
                    title="Serial" if serial else "Parallel", markup=False)


def _check_interpreters(options: list[RunOptions]) -> None:
    """An A/B sweep's interpreters each a Python with torch (OptionsError naming ``--python``), as the CLI checks."""
    pythons = list(dict.fromkeys(o.python for o in options if o.python))
    if len(pythons) > 1:
        from tui.engine.ab import check_interpreter

        for python in pythons:
            check_interpreter(python)
