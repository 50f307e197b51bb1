"""Every run option in one declarative table, as :mod:`tui.engine.store.columns` is for the CSV.

One :class:`OptionSpec` per :class:`~tui.engine.options.RunOptions` field (a test checks it), in
the order a reader decides them. The readers are generic over :data:`OPTIONS`:

- the command line's run flags (``tui.cli.parse``): a spec whose ``cli`` is :data:`VALUE`,
  :data:`SWITCH`, :data:`NEGATED` or :data:`PAIRS` gets its flag, help and reading from here; a
  :data:`CUSTOM` one (a sweep axis, or a flag read in its own way) is written there by hand;
- the reproduce command (``tui.engine.store.reproduce``): the flag and the value's text;
- the config and the history (``tui.engine.store.stored_options``): how a stored value is decoded
  (``stored``), which options the picker cannot show (``picker`` None: the "also" line) and
  which start a program (``code``);
- the picker (``tui.app.components.picker``): which widget an error names, and the measurement
  limits' fields (label, unit, placeholder, tooltip);
- the CSV (``tui.engine.store.columns``): a spec with ``csv`` (the column's help) gets a column of the
  field's value; the older option columns are written there by hand;
- validation (``RunOptions.validated``): the integer options' ranges (:data:`INT_RANGES`) and the number
  options' (:data:`NUMBER_RANGES`), one checker for both (``tui.engine.options.check_range``).

Adding a run option is then a field of ``RunOptions`` and a spec here (one whose default is None may be
left unset), and where the worker acts on it, the line in ``tui.engine.worker`` that does. Imports
nothing from ``tui``: ``tui.engine.options`` reads its ranges.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tui.engine.thresholds import MIN_INTERVAL_BLOCKS

__all__ = ["OptionSpec", "PickerLimit", "NumberRange", "OPTIONS", "SPECS", "INT_RANGES", "NUMBER_RANGES", "TRACE_FILE",
           "TIMEOUT_MAX_S", "TIME_BUDGET_MAX_S", "MEMORY_LIMIT_MAX_GB", "TARGET_CI_MAX", "NOISE_THRESHOLD_MAX",
           "VALUE", "SWITCH", "NEGATED", "PAIRS", "CUSTOM", "FIELD", "DYNAMIC", "PARAMS", "LIMIT", "WIDGET",
           "hidden_fields", "limit_fields", "code_fields", "field_widgets"]

# How the command line reads an option (``OptionSpec.cli``).
VALUE = "value"
"""``--flag X``: X read by ``parse`` (text when None)."""
SWITCH = "switch"
"""``--flag``: sets the option true."""
NEGATED = "negated"
"""``--no-flag``: sets a true-by-default option false."""
PAIRS = "pairs"
"""``--flag K=V`` (repeatable): ``key=value`` pairs with typed values."""
CUSTOM = "custom"
"""Written and read by hand in ``tui.cli.parse`` (a sweep axis, or a flag with its own rule)."""

# How the config and the history store an option (``OptionSpec.stored``).
FIELD = "field"
"""The field's value as JSON, decoded against its annotation (``tui.typed.decode_fields``)."""
DYNAMIC = "dynamic"
"""``auto``/``true``/``false`` or null/true/false (``parse_dynamic``)."""
PARAMS = "params"
"""An object of numbers, text and true/false."""

# How the picker shows an option (``OptionSpec.picker``; None: no field, the "also" line names it).
WIDGET = "widget"
"""A field of its own in the picker's layout (a select, cycler, check box or integer input)."""
LIMIT = "limit"
"""One of the measurement limits' inputs, built from :class:`PickerLimit` (empty: the default)."""

TRACE_FILE = "trace.json"
"""Where a reproduced run's ``--trace`` copy goes (its original path is not part of its options)."""

#: The number options' upper limits, each stated whole in its refusal (NaN and inf are refused the same way).
TIMEOUT_MAX_S = 7 * 86_400
TIME_BUDGET_MAX_S = 86_400
MEMORY_LIMIT_MAX_GB = 1_000_000
TARGET_CI_MAX = 0.5
NOISE_THRESHOLD_MAX = 0.5
NOISE_LIMIT_MAX = 1000.0


@dataclass(frozen=True)
class NumberRange:
    """A number option's allowed values: above 0 and at most ``high`` (or unset, None, where its default is None).

    ``allowed`` is what a refusal states (``timeout_s: 0 is not allowed (allowed: ...)``). For a PAIRS
    option (``noise_limits``) the range is each value's.
    """

    high: float
    allowed: str


@dataclass(frozen=True)
class PickerLimit:
    """A measurement limit's input in the picker: ``label [value] unit``, with a placeholder and a tooltip."""

    label: str
    unit: str
    placeholder: str
    tooltip: str
    """Its tooltip; ``{flag}`` becomes the option's flag."""


@dataclass(frozen=True)
class OptionSpec:
    """One run option: how each front end, the stores and the reproduce command read and write it."""

    name: str
    """The RunOptions field."""
    flag: str | None
    """The ``run`` command's flag (``--block-size``); None: none."""
    cli: str = VALUE
    """How the command line reads it: VALUE, SWITCH, NEGATED, PAIRS or CUSTOM."""
    group: str = "timing"
    """The help's group: ``what``, ``compile``, ``timing``, ``verdict`` or ``output``."""
    help: str = ""
    """The flag's help; ``{default}`` becomes the default (``:g`` for a number)."""
    metavar: str | None = None
    parse: Callable[[str], Any] | None = None
    """What the value's text is (``int``, ``float``; None: text). The command line reads an ``int`` or ``float``
    flag with :func:`~tui.engine.options.parse_int_option` / ``parse_number_option``, as the picker reads its
    field, so a refusal names the field and what is allowed."""
    int_range: tuple[int, int] | None = None
    """An integer option's allowed range (inclusive), checked by ``RunOptions.validated``."""
    number_range: NumberRange | None = None
    """A number option's allowed range, checked by ``RunOptions.validated``."""
    sweep: bool = False
    """A sweep axis: ``compile-lab sweep`` takes a comma list of it."""
    stored: str = FIELD
    """How the config and the history store it: FIELD, DYNAMIC or PARAMS."""
    shown: Callable[[Any], str] | None = None
    """The reproduce command's text for a value; None: a number as the parser reads it back, else ``str``."""
    picker: str | None = None
    """WIDGET, LIMIT, or None when the picker has no field for it (shown in its "also" line)."""
    widget: str | None = None
    """The picker widget an error about it marks (with ``picker`` None: the widget it goes with)."""
    limit: PickerLimit | None = None
    """The picker's input for a LIMIT."""
    code: bool = False
    """Its value starts a program (an interpreter; a compiler and its flags): asked before it runs."""
    csv: str | None = None
    """The help of a CSV column of the field's value; None: none, or a column written in ``columns.py``."""
    label: str | None = None
    """The key of its short form in ``tui.present.option_fields``, where it has one."""

    @property
    def dest(self) -> str:
        """The argparse destination of its flag (``--time-budget`` -> ``time_budget``; ``--no-profile`` -> the name)."""
        if self.flag is None or self.cli == NEGATED:
            return self.name
        return self.flag.lstrip("-").replace("-", "_")


def _dynamic_text(value: Any) -> str:
    return "auto" if value is None else str(value).lower()


OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("workload", "--workload", CUSTOM, "what", picker=WIDGET, widget="workload", label="workload"),
    OptionSpec("params", "--param", PAIRS, "what", sweep=True, stored=PARAMS, picker=WIDGET, label="params"),
    OptionSpec("train", "--train", SWITCH, "what", "time a training step (cnn, mlp, transformer_block)",
               picker=WIDGET, widget="train", label="flags"),
    OptionSpec("device", "--device", CUSTOM, "what", picker=WIDGET, widget="device", label="device"),
    OptionSpec("seed", "--seed", VALUE, "timing", "random seed (default {default})", metavar="N", parse=int,
               int_range=(0, 2**31 - 1)),
    OptionSpec("python", "--python", CUSTOM, "what", sweep=True, code=True, label="python",
               csv="the interpreter the worker ran with (--python; empty: compile-lab's own)"),
    OptionSpec("backend", "--backend", CUSTOM, "compile", sweep=True, picker=WIDGET, widget="backend",
               label="backend"),
    OptionSpec("mode", "--mode", CUSTOM, "compile", sweep=True, picker=WIDGET, widget="mode", label="mode"),
    OptionSpec("inductor_options", "--option", PAIRS, "compile",
               "an inductor option, e.g. triton.cudagraphs=false (repeatable)", metavar="K=V", widget="mode",
               code=True, label="flags",
               csv="the inductor options the run set (--option, a tune's candidate), as JSON; {} for none"),
    OptionSpec("compile_optimizer", "--compile-optimizer", SWITCH, "what",
               "with --train: compile the optimizer step too", widget="train"),
    OptionSpec("fullgraph", "--fullgraph", CUSTOM, "compile", sweep=True, picker=WIDGET, widget="fullgraph",
               label="fullgraph"),
    OptionSpec("dynamic", "--dynamic", CUSTOM, "compile", sweep=True, stored=DYNAMIC, shown=_dynamic_text,
               picker=WIDGET, widget="dynamic", label="dynamic"),
    OptionSpec("dtype", "--dtype", CUSTOM, "compile", sweep=True, picker=WIDGET, widget="dtype", label="dtype"),
    OptionSpec("precision", "--precision", CUSTOM, "compile", sweep=True, picker=WIDGET, widget="precision",
               label="dtype"),
    OptionSpec("cold_compile", "--cold-compile", SWITCH, "compile",
               "a fresh inductor/triton cache dir (true cold compile)", picker=WIDGET, widget="cold-compile",
               label="flags"),
    OptionSpec("warmup", "--warmup", VALUE, "timing",
               "warm-up calls per side, then more until the time settles; 0: only the 3 compiled calls CUDA graphs "
               "need (default {default})", metavar="N", parse=int, int_range=(0, 100_000), picker=WIDGET,
               widget="warmup"),
    OptionSpec("iters", "--iters", VALUE, "timing",
               "measured iterations per side, at least (default {default}; an interval needs "
               f"{MIN_INTERVAL_BLOCKS} blocks of --block-size; a CPU run without --time-budget goes on towards a "
               "5%% interval for up to 1 s)",
               metavar="N",
               parse=int, int_range=(1, 10_000_000), picker=WIDGET, widget="iters"),
    OptionSpec("block_size", "--block-size", VALUE, "timing", "iterations per interleaved block (default {default})",
               metavar="N", parse=int, int_range=(1, 100_000), picker=LIMIT, widget="block-size",
               limit=PickerLimit("block", "calls", "10", "calls per interleaved block of eager and compiled ({flag})")),
    OptionSpec("time_budget_s", "--time-budget", VALUE, "timing", "stop measuring after S seconds", metavar="S",
               parse=float, picker=LIMIT, widget="time-budget",
               number_range=NumberRange(TIME_BUDGET_MAX_S, "a number of seconds above 0 and at most "
                                        f"{TIME_BUDGET_MAX_S} (1 day), or unset for no budget"),
               limit=PickerLimit("budget", "s", "none",
                                 "stop measuring after this many seconds; empty: no budget ({flag})")),
    OptionSpec("l2_flush", "--l2-flush", SWITCH, "timing", "flush the L2 cache between iterations (GPU)",
               picker=WIDGET, widget="l2-flush", label="flags"),
    OptionSpec("timeout_s", "--timeout", VALUE, "timing", "kill a run after S seconds (default {default})",
               metavar="S", parse=float, picker=LIMIT, widget="timeout",
               number_range=NumberRange(TIMEOUT_MAX_S, f"a number of seconds above 0 and at most {TIMEOUT_MAX_S} "
                                                       "(7 days)"),
               limit=PickerLimit("timeout", "s", "600", "kill the run after this many seconds ({flag})")),
    OptionSpec("memory_limit_gb", "--memory-limit", VALUE, "timing",
               "CPU runs: cap the worker's address space at GB gigabytes; a bigger allocation fails the run as "
               "out_of_memory instead of waking the system's OOM killer (default: no limit)", metavar="GB",
               parse=float, picker=LIMIT, widget="memory-limit",
               number_range=NumberRange(MEMORY_LIMIT_MAX_GB, "a number of GB above 0 and at most "
                                        f"{MEMORY_LIMIT_MAX_GB}, or unset for no limit"),
               limit=PickerLimit("memory", "GB", "no limit", "CPU runs only: cap the worker's address space; a "
                                 "bigger allocation fails the run as out_of_memory ({flag}); empty: no limit")),
    OptionSpec("target_ci", "--target-ci", VALUE, "timing",
               "measure on (within --time-budget, else 60 s) until the speedup's 95%% interval is at most F wide "
               "relative to it, e.g. 0.02 (a CPU run without --time-budget: 0.05 within 1 s of measuring)",
               metavar="F", parse=float,
               number_range=NumberRange(TARGET_CI_MAX, f"a fraction above 0 and at most {TARGET_CI_MAX} (0.02 = an "
                                                       "interval 2% wide), or unset")),
    OptionSpec("noise_threshold", "--noise-threshold", VALUE, "verdict",
               "faster when the interval's low end exceeds 1 + T (default {default})", metavar="T", parse=float,
               number_range=NumberRange(NOISE_THRESHOLD_MAX, f"a fraction above 0 and at most {NOISE_THRESHOLD_MAX} "
                                                             "(0.02 = 2%)")),
    OptionSpec("noise_limits", "--noise-limit", PAIRS, "verdict",
               "change one limit of the noisy check, e.g. max_other_cpu_cores=1.5 (repeatable)", metavar="NAME=VALUE",
               number_range=NumberRange(NOISE_LIMIT_MAX, f"a number above 0 and at most {NOISE_LIMIT_MAX:g}")),
    OptionSpec("profile", "--no-profile", NEGATED, "timing",
               "skip the profile pass after measuring (kernels per call, the kernel diff; never part of the timings)"),
    OptionSpec("trace", "--trace", CUSTOM, "output", shown=lambda value: TRACE_FILE),
    OptionSpec("torch_trace", "--torch-trace", SWITCH, "output",
               "keep a TORCH_TRACE directory per run in its data folder (for tlparse); such a run starts a fresh "
               "worker, and its compile time includes torch's structured logging"),
)

SPECS: dict[str, OptionSpec] = {spec.name: spec for spec in OPTIONS}
"""The specs by RunOptions field."""

INT_RANGES: dict[str, tuple[int, int]] = {spec.name: spec.int_range for spec in OPTIONS if spec.int_range}
"""The integer options and their ranges (inclusive)."""
NUMBER_RANGES: dict[str, NumberRange] = {spec.name: spec.number_range for spec in OPTIONS if spec.number_range}
"""The number options and their ranges (``noise_limits``: each of its values')."""


def hidden_fields() -> tuple[str, ...]:
    """The options the picker has no field for (shown in its "also" line where they are not their defaults)."""
    return tuple(spec.name for spec in OPTIONS if spec.picker is None)


def limit_fields() -> tuple[str, ...]:
    """The picker's measurement limits (LIMIT), in the order it shows them."""
    return tuple(spec.name for spec in OPTIONS if spec.picker == LIMIT)


def code_fields() -> tuple[str, ...]:
    """The options whose values start a program."""
    return tuple(spec.name for spec in OPTIONS if spec.code)


def field_widgets() -> dict[str, str]:
    """RunOptions field -> the picker widget an error about it marks (fields with one)."""
    return {spec.name: spec.widget for spec in OPTIONS if spec.widget is not None}
