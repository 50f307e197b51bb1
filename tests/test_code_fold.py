"""fold_code: the tune's answer code folded to a width stays the same Python, row by row as a terminal copies it."""

from __future__ import annotations

import ast

import pytest

from tui.engine.options import RunOptions
from tui.engine.tune.code import compile_call, config_form
from tui.present.code_fold import fold_code
from tui.present.tune_answer import fold_answer

CALL = ("compiled = torch.compile(model, options={'max_autotune': True, 'max_autotune_gemm_backends': 'ATEN,TRITON', "
        "'triton.cudagraphs': True})")


def _same_python(original: str, rows: list[str]) -> None:
    assert ast.dump(ast.parse("\n".join(rows))) == ast.dump(ast.parse(original))


@pytest.mark.parametrize("width", [30, 40, 60, 76, 100])
def test_a_call_folds_after_commas_inside_its_brackets_and_stays_the_same_python(width):
    rows = fold_code(CALL, width)
    _same_python(CALL, rows)
    widest_piece = len("    'max_autotune_gemm_backends': 'ATEN,TRITON',")  # no place to fold inside it
    assert len(rows) > 1 and all(len(row) <= max(width, widest_piece) for row in rows), rows
    assert "'ATEN,TRITON'" in "\n".join(rows)  # the comma inside the string is no place to fold


def test_a_comment_folds_into_comment_rows():
    line = "# the settings of mode 'max-autotune-no-cudagraphs' (torch's own list for it), then the options"
    rows = fold_code(line, 40)
    assert len(rows) == 3 and all(row.startswith("# ") and len(row) <= 40 for row in rows), rows
    assert " ".join(row[2:] for row in rows) == line[2:]


def test_a_line_that_fits_or_has_no_place_to_fold_stays_whole():
    assert fold_code("torch._inductor.config.freezing = True", 80) == ["torch._inductor.config.freezing = True"]
    long_name = "torch._inductor.config.max_autotune_gemm_backends = 'ATEN,TRITON'"
    assert fold_code(long_name, 30) == [long_name]  # soft-wrapped by the screen instead
    assert fold_code(CALL, 0) == [CALL]


def test_the_answers_code_folded_is_python_row_by_row():
    knobs = {"max_autotune_gemm_backends": "ATEN,TRITON", "coordinate_descent_tuning": True}
    options = RunOptions(device="cuda", mode="max-autotune-no-cudagraphs", inductor_options=knobs)
    call, config = compile_call(options), config_form(options)
    lines = [(call, False), *((line, False) for line in config.splitlines()), ("prose is folded apart", True)]
    text = fold_answer(lines, 60)
    rows = text.splitlines()[:-1]
    assert any(len(line) > 60 for line, _ in lines)
    ast.parse("\n".join(rows))  # every row as shown: no comment row without its '#', no call cut in a string
    assert all(len(row) <= 60 for row in rows if not row.startswith("torch._inductor.config.")), rows
