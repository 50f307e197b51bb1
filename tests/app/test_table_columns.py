"""The results table's columns as data (no app): short forms, priorities, the layout rules, the config's choice."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from tui.app.components.result_cells import row_cells
from tui.app.config import AppConfig
from tui.present.option_fields import (
    OPTION_FIELDS,
    differing,
    option_words,
    short_device,
    short_dtype,
    short_mode,
)
from tui.app.table_columns import (
    CELL_KEYS,
    TABLE_COLUMNS,
    Variety,
    decode_choice,
    default_choice,
    encode_choice,
    table_layout,
)
from tui.engine.options import MODES, RunOptions
from tui.engine.store.results import RunRecord


def _cells(**options) -> dict:
    return {field.key: SimpleNamespace(plain=field.value(RunOptions(**options).validated())) for field in OPTION_FIELDS}


def _no_base() -> dict:
    """The default columns as the table asks for them with no baseline marked (``vs base`` shows only then)."""
    return {**default_choice(), "vs_base": False}


def _variety(session: list[dict], history: list[dict] = ()) -> Variety:
    variety = Variety()
    for options in session:
        variety.add(_cells(**options), history=False)
    for options in history:
        variety.add(_cells(**options), history=True)
    return variety


def test_short_forms_are_defined_once_and_fit_their_columns():
    assert short_mode(RunOptions(mode="max-autotune-no-cudagraphs")) == "max-autotune-no-cg"
    assert short_mode(RunOptions(mode="reduce-overhead")) == "reduce-overhead"
    assert short_mode(RunOptions(backend="aot_eager")) == "–"  # the mode does not apply
    assert short_dtype(RunOptions(dtype="bfloat16")) == "bf16"
    assert short_dtype(RunOptions(precision="tf32")) == "fp32+tf32"
    assert short_dtype(RunOptions(precision="ieee", dtype="bfloat16")) == "bf16+ieee"
    assert short_dtype(RunOptions()) == "fp32"
    assert short_device("cuda:GPU-8d4f0000-1111-2222-3333-444455556666") == "GPU-8d4f0000"
    assert short_device("cuda:1") == "cuda:1"
    mode = next(column for column in TABLE_COLUMNS if column.key == "mode")
    assert max(len(short_mode(RunOptions(mode=m))) for m in MODES) <= mode.width  # no mode is ever cut


def test_every_available_column_has_a_cell_and_the_table_is_by_priority():
    record = RunRecord(
        "20250101-000000-cells1", RunOptions(workload="mlp", train=True, compile_optimizer=True).validated()
    )
    assert tuple(row_cells(record)) == CELL_KEYS
    priorities = [column.priority for column in TABLE_COLUMNS]
    assert priorities == sorted(priorities) and len(set(priorities)) == len(priorities)
    assert row_cells(record)["flags"].plain == "train+opt"
    assert all(column.available for column in TABLE_COLUMNS)  # node has its cell now (one worker per GPU)
    assert {key for key, shown in default_choice().items() if not shown} == {"verdict"}
    assert {column.key for column in TABLE_COLUMNS if column.differing} == {"gpu", "node"}


def test_a_sweep_shows_what_differs_right_after_the_speedup_and_says_the_rest_in_the_title():
    sweep = [
        dict(mode=m, dynamic=d) for m in ("reduce-overhead", "max-autotune-no-cudagraphs") for d in (None, True, False)
    ]
    layout = table_layout(_no_base(), _variety(sweep), history_shown=True)
    assert layout.keys[:4] == ("status", "speedup", "mode", "dynamic")
    assert [column.width for column in layout.columns[2:4]] == [18, 5]  # as wide as the widest value
    assert layout.shared == ("pointwise", "n=512", "inductor", "fp32", "cpu")
    assert layout.apart == ("mode", "dynamic")


def test_fields_that_differ_with_the_shown_history_tell_the_rows_apart_too():
    history = [dict(workload="matmul"), dict(workload="mlp", dtype="bfloat16")]
    session = [dict(fullgraph=True), dict(fullgraph=False)]
    layout = table_layout(_no_base(), _variety(session, history), history_shown=True)
    # Right after the speedup, in the fields' order: rows of different workloads show their workload.
    assert layout.keys[:6] == ("status", "speedup", "workload", "params", "fullgraph", "dtype")
    assert layout.apart == ("workload", "params", "fullgraph", "dtype")
    assert "cpu" in layout.shared and "dyn=auto" in layout.shared
    hidden = table_layout(_no_base(), _variety(session, history), history_shown=False)
    assert hidden.keys[2:3] == ("fullgraph",) and "workload" not in hidden.keys  # every row shown shares it
    assert hidden.shared[:2] == ("pointwise", "n=512")


def test_a_hidden_option_is_neither_a_column_nor_in_the_title():
    variety = _variety([dict(mode="default"), dict(mode="reduce-overhead")])
    layout = table_layout({**_no_base(), "mode": False, "device": False, "eager_ms": False}, variety, True)
    assert "mode" not in layout.keys and "eager_ms" not in layout.keys and "cpu" not in layout.shared
    assert table_layout({**_no_base(), "status": False}, variety, True).keys[0] == "status"  # always shown


def test_the_command_line_label_puts_differing_fields_first_and_says_them_whole():
    configs = [RunOptions(mode=m, dynamic=d, fullgraph=f).validated() for m, d, f in
               (("default", None, False), ("max-autotune-no-cudagraphs", True, True))]
    differs = differing(configs)
    assert differs == {"mode", "dynamic", "fullgraph"}
    assert option_words(configs[0], differs) == ["default", "no-fullgraph", "dyn=auto", "pointwise", "n=512",
                                                 "inductor", "fp32", "cpu"]
    assert option_words(configs[1], differs, skip=("workload", "params"))[:3] == ["max-autotune-no-cg", "fullgraph",
                                                                               "dyn=true"]
    assert option_words(configs[0]) == ["pointwise", "n=512", "inductor", "dyn=auto", "fp32", "cpu"]


@pytest.mark.parametrize("value, problem", [
    ({"nope": True}, "columns.nope: unknown column (ignored; known: status, speedup,"),
    ({"vs base": True}, "columns.vs base: unknown column"),  # its header, not its key
    ({"peak_mem": "no"}, "columns.peak_mem: expected true or false, got 'no' (ignored)"),
    ({"status": False}, "columns.status: cannot be hidden (ignored)"),
    (["peak_mem"], "columns: expected an object of column: true/false, got ['peak_mem'] (default used)"),
])
def test_a_bad_columns_setting_is_one_problem_per_entry_and_the_rest_is_kept(value, problem):
    extra = {"verdict": True} if isinstance(value, dict) else {}
    choice, problems = decode_choice({**value, **extra} if extra else value)
    assert len(problems) == 1 and problems[0].startswith(problem), problems
    assert choice["status"] is True and choice["verdict"] is bool(extra)


def test_the_config_keeps_only_the_choices_that_differ_from_the_defaults():
    assert encode_choice({**default_choice(), "peak_mem": False, "verdict": True}) == {
        "peak_mem": False,
        "verdict": True,
    }
    old, problems = AppConfig.decode({"version": 1, "theme": "textual-dark", "show_history": True})  # before columns
    assert old.columns == {} and problems == []
    config, problems = AppConfig.decode({"columns": {"peak_mem": False, "nope": 1}})
    assert config.columns == {"peak_mem": False} and len(problems) == 1
    assert AppConfig.decode(config.to_dict())[0].columns == {"peak_mem": False}


def _where(gpu: str = "–", node: str = "–", **options) -> dict:
    cells = _cells(params={"n": 512}, **options)
    return {**cells, "gpu": SimpleNamespace(plain=gpu), "node": SimpleNamespace(plain=node)}


def test_the_gpu_and_node_columns_show_only_while_the_rows_ran_on_more_than_one():
    """A pool of one kind of GPU tells its rows apart by device (cuda:N); the GPU's name and the host only
    when they differ (a CPU row's – does not count), then next to the option fields that differ."""
    variety = Variety()
    for index, gpu in enumerate(("H200", "H200", "H100")):
        variety.add(_where(gpu, "node-a", device=f"cuda:{index}"), history=False)
    variety.add(_where(device="cpu"), history=False)  # no GPU, no node said
    layout = table_layout(_no_base(), variety, history_shown=True)
    assert layout.keys[:4] == ("status", "speedup", "device", "gpu") and "node" not in layout.keys
    assert "gpu" in layout.apart and layout.columns[3].width == 4  # as wide as "H200"
    assert "gpu" not in table_layout({**_no_base(), "gpu": False}, variety, True).keys  # the user hid it
    variety.add(_where("H200", "node-b", device="cuda:0"), history=False)
    assert table_layout(_no_base(), variety, True).keys[3:5] == ("gpu", "node")
    same = Variety()
    for index in range(4):
        same.add(_where("H200", "node-a", device=f"cuda:{index}"), history=False)
    layout = table_layout(_no_base(), same, history_shown=True)
    assert "gpu" not in layout.keys and "node" not in layout.keys and layout.keys[2] == "device"
    assert not any(word in layout.shared for word in ("H200", "node-a"))  # never in the title
    earlier = Variety()
    for gpu in ("H200", "H200"):
        earlier.add(_where(gpu, device="cuda:0"), history=False)
    earlier.add(_where("A100", device="cuda:0"), history=True)
    # Shown previous rows count like this session's: the GPU tells them apart, next to the speedup.
    assert table_layout(_no_base(), earlier, history_shown=True).keys[2] == "gpu"
    assert "gpu" not in table_layout(_no_base(), earlier, history_shown=False).keys


def test_a_rows_node_cell_is_its_host():
    record = RunRecord("20250101-000000-node01", RunOptions().validated())
    assert row_cells(record)["node"].plain == "–"
    record.env = dataclasses.replace(record.env, node="gpu-box-7", gpu_name="NVIDIA H200")
    cells = row_cells(record)
    assert cells["node"].plain == "gpu-box-7" and cells["gpu"].plain == "H200"


MLP = {"batch": 64, "width": 256, "depth": 3}
SWEEP_AFTER_A_RUN = [dict(workload="pointwise", params={"n": 512})] + [
    dict(workload="mlp", params=MLP, mode=mode, fullgraph=fg) for mode in ("default", "reduce-overhead")
    for fg in (False, True)
]


def test_columns_that_do_not_fit_fold_into_one_config_cell_after_the_speedup():
    variety = _variety(SWEEP_AFTER_A_RUN)
    wide = table_layout(_no_base(), variety, history_shown=True, width=200)
    assert wide.keys[:6] == ("status", "speedup", "workload", "params", "mode", "fullgraph") and wide.compact == ()
    narrow = table_layout(_no_base(), variety, history_shown=True, width=78)  # 80 columns, the sidebar hidden
    assert narrow.keys[:3] == ("status", "speedup", "config")
    assert narrow.compact == ("workload", "params", "mode", "fullgraph")
    assert not set(narrow.compact) & set(narrow.keys)
    ends = sum(column.width + 2 for column in narrow.columns[:3])
    assert ends <= 78  # the config cell ends on screen
    unfolded = table_layout({**_no_base(), "config": False}, variety, history_shown=True, width=78)
    assert unfolded.keys[2:6] == ("workload", "params", "mode", "fullgraph")  # hidden config: no folding
    assert table_layout(_no_base(), variety, history_shown=True) == wide  # no width: no folding


def test_a_config_cell_names_the_workload_and_options_before_the_parameters():
    from tui.app.components.result_cells import config_cell

    record = RunRecord("20250101-000000-cfg001", RunOptions(workload="mlp", params=MLP, mode="reduce-overhead",
                                                            fullgraph=True).validated())
    cells = row_cells(record)
    keys = ("workload", "params", "mode", "fullgraph")
    assert config_cell(cells, keys).plain == "mlp reduce-overhead fullgraph batch=64 width=256 depth=3"
    plain = RunRecord("20250101-000000-cfg002", RunOptions(workload="mlp", params=MLP).validated())
    assert config_cell(row_cells(plain), keys).plain == "mlp batch=64 width=256 depth=3"  # defaults unsaid
    assert config_cell(row_cells(plain), ("mode", "fullgraph")).plain == "default no-fullgraph"  # nothing else
