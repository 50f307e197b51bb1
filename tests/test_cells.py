"""Folding prose by terminal cells: a wide character (CJK, emoji) takes two cells, and a folded row still fits."""

from __future__ import annotations

import textwrap

import pytest
from rich.cells import cell_len

from tui.present.cells import wrap_cells
from tui.present.code_fold import fold_code
from tui.present.format import hanging_lines

PROSE = ("compiled time spread IQR/median 12% > 10%: the runs disagree more than the verdict allows, so the "
         "speedup is called noisy; run with --repeat 3 to measure it across fresh processes")
CJK_PATH = "模型文件 /home/研究员/实验/卷积网络模型.py 的输出与 eager 不同 (最大绝对误差 0.5)"


@pytest.mark.parametrize("width", [15, 20, 33, 40, 79, 80, 120])
def test_plain_prose_folds_as_textwrap_folds_it(width):
    """Where every word fits a row (a longer one starts a row of its own here; textwrap cuts it where it stands)."""
    expected = textwrap.wrap(PROSE, width, initial_indent="  ", subsequent_indent="    ", break_on_hyphens=False)
    assert wrap_cells(PROSE, width, initial_indent="  ", subsequent_indent="    ") == expected


@pytest.mark.parametrize("width", [10, 16, 24, 40])
def test_wide_characters_count_two_cells_and_every_row_fits(width):
    assert any(cell_len(row) > width for row in textwrap.wrap(CJK_PATH, width))  # what counting characters did
    rows = wrap_cells(CJK_PATH, width, subsequent_indent="  ")
    assert rows and all(cell_len(row) <= width for row in rows), rows
    assert "".join(row.strip() for row in rows).replace(" ", "") == CJK_PATH.replace(" ", "")


def test_a_word_wider_than_a_row_is_cut_by_cells_or_left_whole():
    word = "卷积网络模型卷积网络模型"  # 24 cells
    rows = wrap_cells(f"a {word} b", 10, subsequent_indent="  ")
    assert rows == ["a", "  卷积网络", "  模型卷积", "  网络模型", "  b"]
    assert wrap_cells(f"a {word} b", 10, break_long_words=False) == ["a", word, "b"]
    assert wrap_cells("   ", 10) == [] and wrap_cells("x", 0) == ["x"]


def test_the_front_ends_folds_keep_a_chinese_path_inside_the_width():
    rows = hanging_lines(f"  run 3: {CJK_PATH}", 30)
    assert all(cell_len(row) <= 30 for row in rows) and rows[0].startswith("  run 3:"), rows
    assert all(row.startswith("    ") for row in rows[1:])
    comment = fold_code(f"# {CJK_PATH}", 36)
    assert len(comment) > 1 and all(cell_len(row) <= 36 and row.startswith("# ") for row in comment), comment


def test_the_spaces_between_two_words_on_a_row_stay_as_they_are():
    """``history --sessions`` aligns its fields with runs of spaces; a fold that made them one broke the columns."""
    line = "20261201-090000-5e5510  2026-12-01 09:00  session:last-2    2 runs  pointwise"
    assert wrap_cells(line, 80) == [line]
    assert wrap_cells(line, 40) == textwrap.wrap(line, 40)
    assert wrap_cells("two\tthree\nfour", 40) == textwrap.wrap("two\tthree\nfour", 40) == ["two     three four"]


def test_a_row_narrower_than_a_wide_character_takes_it_whole_and_the_fold_ends():
    """One cell of room and a two-cell character: the cut took nothing and the fold never ended (the chart's
    failure lines at 3 columns, the sweep preview at 1)."""
    assert wrap_cells("a 字字", 1) == ["a", "字", "字"]
    assert hanging_lines("  run 1: 字字字", 5) == ["  run", "    1", "    :", "    字", "    字", "    字"]
