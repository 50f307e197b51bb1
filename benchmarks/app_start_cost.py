"""CPU cost of starting the app: start, first frame, exit, as the app tests do it (issue 25).

Run from the repository root::

    python benchmarks/app_start_cost.py                    # 80x24 and 160x48, 15 starts each
    python benchmarks/app_start_cost.py -n 30 --size 80x24
    python benchmarks/app_start_cost.py --profile          # plus a cProfile top-20 per size
    python benchmarks/app_start_cost.py --bare             # a bare Textual app, for comparison
    python benchmarks/app_start_cost.py --own-css          # each app parses its CSS, as a user's does
    python benchmarks/app_start_cost.py --without picker   # the main screen with an empty picker
    python benchmarks/app_start_cost.py --without rows     # the picker's fields without their labelled rows

Each start is ``CompileLabApp.run_test(size=...)`` wired as ``tests/app/conftest.py`` wires it (the
fake worker's runner, a telemetry source that reports no GPU) with a history and a config in a
temporary directory and no history loaded, then one ``pilot.pause()`` (the first frame is drawn)
and the exit. The figure is this process's CPU time (``time.process_time``) around the whole
start-to-exit, median and spread over ``-n`` starts after one warm-up start (the first start of
a process also imports and parses the stylesheet). The garbage collector runs at the suite's
thresholds (``tests/conftest.py``) unless ``--python-gc``: the interpreter's own, what a user runs. The
apps share their CSS parses (``tests/css_cache.py``), as the tests' apps do, unless ``--own-css``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "app"))

SUITE_GC_THRESHOLDS = (10_000, 20, 100)
"""The thresholds ``tests/conftest.py`` sets in the test processes."""


def make_app(home: Path) -> Any:
    """The app as the tests' ``make_app`` fixture makes it, its files under ``home``."""
    from app_helpers import fake_runner, no_gpu_source

    from tui.app.app import CompileLabApp
    from tui.engine.store.history import History

    return CompileLabApp(runner=fake_runner(), telemetry=no_gpu_source(), history=History(home / "history.jsonl"),
                         config_path=home / "config.json", gpu_interval=0.2, load_history=False)


def make_bare_app(home: Path) -> Any:
    """A bare Textual app with a Header, an Input, a DataTable and a Footer."""
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable, Footer, Header, Input

    class Bare(App[None]):
        BINDINGS = [("r", "noop", "Run"), ("q", "quit", "Quit")]

        def compose(self) -> ComposeResult:
            yield Header()
            yield Input()
            yield DataTable()
            yield Footer()

    return Bare()


async def start_once(factory: Any, home: Path, size: tuple[int, int]) -> float:
    """CPU seconds of one start, first frame and exit."""
    app = factory(home)
    begin = time.process_time()
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
    spent = time.process_time() - begin
    runner = getattr(app, "runner", None)
    if runner is not None:
        runner.kill_all()
    return spent


def measure(factory: Any, size: tuple[int, int], n: int, profile: bool) -> tuple[list[float], str]:
    """``n`` starts after one warm-up: their CPU seconds, and the profile's top-20 when asked."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        asyncio.run(start_once(factory, home, size))
        times: list[float] = []
        profiler = cProfile.Profile() if profile else None
        for _ in range(n):
            if profiler is not None:
                profiler.enable()
            times.append(asyncio.run(start_once(factory, home, size)))
            if profiler is not None:
                profiler.disable()
    report = ""
    if profiler is not None:
        out = io.StringIO()
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(20)
        stats.sort_stats("tottime").print_stats(20)
        report = out.getvalue()
    return times, report


def leave_out(part: str) -> None:
    """Start the app without ``part`` of its picker, to read that part's share of a start.

    ``picker``: the picker composes nothing (and its mount hook does nothing, having no fields to set);
    ``rows``: each field (the workload's parameters' too) is composed bare, without the ``FieldRow`` around it
    (which draws the field's label and unit).
    """
    from tui.app.components import picker, picker_params

    if part == "picker":
        picker.Picker.compose = lambda self: iter(())  # type: ignore[method-assign]
        picker.Picker.on_mount = lambda self: None  # type: ignore[method-assign]
    elif part == "rows":
        picker.field_row = picker_params.field_row = lambda label, widget, **_: widget  # type: ignore[assignment]


def parse_size(text: str) -> tuple[int, int]:
    """``WxH`` -> (W, H)."""
    width, _, height = text.lower().partition("x")
    try:
        return int(width), int(height)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--size: expected WIDTHxHEIGHT such as 80x24, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=15, help="timed starts per size (default 15)")
    parser.add_argument("--size", type=parse_size, action="append",
                        help="terminal size WxH, repeatable (default: 80x24 and 160x48, the tests' two usual sizes)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile top-20 (cumulative, own time)")
    parser.add_argument("--bare", action="store_true", help="a bare Textual app instead of compile-lab")
    parser.add_argument("--python-gc", action="store_true", help="the interpreter's GC thresholds, not the suite's")
    parser.add_argument("--own-css", action="store_true",
                        help="each app parses its CSS (Textual's cache per app), not the tests' shared parses")
    parser.add_argument("--without", choices=("picker", "rows"),
                        help="leave out the picker (its compose and mount) or its fields' rows and labels")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("-n: at least 1")
    if not args.python_gc:
        gc.set_threshold(*SUITE_GC_THRESHOLDS)
    factory = make_bare_app if args.bare else make_app
    if args.without:
        leave_out(args.without)
    import textual
    import textual.css.stylesheet  # noqa: F401  (loaded for css_cache, as the tests' collection loads it)

    if not args.own_css:
        import css_cache

        css_cache.install_if_loaded()

    print(f"python {sys.version.split()[0]}, textual {textual.__version__}, gc {gc.get_threshold()}, "
          f"{'bare app' if args.bare else 'CompileLabApp'}"
          f"{f' without {args.without}' if args.without else ''}, {'own' if args.own_css else 'shared'} CSS parses")
    for size in args.size or [(80, 24), (160, 48)]:
        times, report = measure(factory, size, args.n, args.profile)
        print(f"{size[0]}x{size[1]}: median {statistics.median(times):.3f} CPU-s per start "
              f"(min {min(times):.3f}, max {max(times):.3f}, n={len(times)})")
        if report:
            print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
