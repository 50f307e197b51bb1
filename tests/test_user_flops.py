"""A user workload's FLOPs and label (issue 14 item 7): counted where FlopCounterMode can, never made up.

On the H200 an ``nn.TransformerEncoderLayer`` in bf16 left ``tflops`` empty: in inference it runs
PyTorch's fused fast path, one native op the counter has no formula for. The count now runs with
that fast path off (the same arithmetic, unfused). A real worker runs a user file holding an
``nn.Linear`` on the CPU: FLOPs per call are exactly the matmul's, TFLOP/s follow, and the file's
``label`` reaches the row, the CLI table and the stored run.
"""

from __future__ import annotations

import io
import textwrap

import pytest
from rich.console import Console

torch = pytest.importorskip("torch")

from tui.app.components.result_cells import row_cells  # noqa: E402
from tui.present.format import input_label  # noqa: E402
from tui.cli.render import print_table  # noqa: E402
from tui.engine.store.history import History  # noqa: E402
from tui.engine.options import RunOptions  # noqa: E402
from tui.engine.store.results import RunRecord  # noqa: E402
from tui.engine.runner import WorkerRunner  # noqa: E402
from tui.engine.worker.flops import count_flops  # noqa: E402

LINEAR = '''
    import torch
    from torch import nn

    def make_workload(device, dtype, **params):
        model = nn.Linear(256, 128).to(device=device, dtype=dtype).requires_grad_(False)
        x = torch.randn(64, 256, device=device, dtype=dtype)
        return {"model": model, "inputs": (x,), "label": "linear 256->128"}
'''


def test_an_encoder_layers_fused_fast_path_is_counted_unfused():
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, batch_first=True).eval().requires_grad_(False)
    x = torch.randn(2, 16, 64)
    before = torch.backends.mha.get_fastpath_enabled()
    with torch.no_grad():
        flops, warning = count_flops(lambda args: layer(*args), (x,))
    assert warning is None and torch.backends.mha.get_fastpath_enabled() == before  # put back as it was
    # q, k, v and out projections, the two feed-forward matmuls, and attention's two batched matmuls
    tokens, width, ff = 2 * 16, 64, 128
    assert flops == 2 * tokens * width * width * 4 + 2 * tokens * width * ff * 2 + 2 * 2 * (2 * 16 * 16 * 64)


def test_a_count_of_nothing_stays_none_with_the_fast_path_off():
    assert count_flops(lambda args: args[0] * 2, (torch.ones(4),)) == (None, None)


@pytest.mark.slow  # a real worker: imports torch, compiles on the CPU
async def test_a_user_files_linear_gets_its_flops_and_its_label_in_the_row(tmp_path, compile_lab_home):
    path = tmp_path / "linear.py"
    path.write_text(textwrap.dedent(LINEAR))
    options = RunOptions(workload=str(path), warmup=1, iters=20, block_size=5, profile=False).validated()
    record = RunRecord.new(options)
    runner = WorkerRunner(keep_spare=False)
    try:
        await runner.run(record)
    finally:
        await runner.aclose()
    assert record.status == "done", (record.error_kind, record.error_message)
    assert record.flops_per_call == 2 * 64 * 256 * 128  # addmm: 2 x M x N x K (the bias add is not counted)
    summary = record.summary()
    assert summary.tflops == pytest.approx(record.flops_per_call / (summary.compiled.iter.median * 1e-3) / 1e12)
    assert input_label(record) == '"linear 256->128"'
    assert row_cells(record)["params"].plain == '"linear 256->128"'
    console = Console(file=io.StringIO(), width=120, color_system=None)
    print_table([record], console)
    assert '"linear 256->128"' in console.file.getvalue()
    from tui.app.components.details import render_tab

    console = Console(file=io.StringIO(), width=120, color_system=None)
    console.print(render_tab(record, "summary"))
    assert '"linear 256->128"' in console.file.getvalue().splitlines()[0]  # the details title
    History().append(record)
    (stored,), _ = History().load()
    assert input_label(stored) == '"linear 256->128"' and stored.flops_per_call == record.flops_per_call
