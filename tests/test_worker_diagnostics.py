"""Dynamo's counters and metrics as the worker reads them, checked on the installed torch."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tui.engine.worker import diagnostics  # noqa: E402
from tui.engine.worker.failures import classify, first_meaningful_line  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def branchy(x):
    y = x * 2
    if y.sum() > 0:  # a data-dependent branch: dynamo must break the graph here
        return y + 1
    return y - 1


def plain(x):
    return x * 2 + 1


def _diagnose(fn, *inputs_list, **compile_kwargs):
    before = diagnostics.snapshot()
    compiled = torch.compile(fn, backend="eager", **compile_kwargs)
    for inputs in inputs_list:
        compiled(inputs)
    return diagnostics.report(before)


def test_a_data_dependent_branch_counts_as_a_graph_break_with_its_reason_and_place():
    report = _diagnose(branchy, torch.ones(4), torch.ones(4))
    assert report.graph_breaks >= 1
    reason = report.graph_break_reasons[0]
    assert "Data-dependent branching" in reason
    assert "test_worker_diagnostics.py" in reason and "in branchy" in reason and "y.sum() > 0" in reason
    assert report.unique_graphs >= 2 and report.resumes >= 1
    assert report.recompiles == 0 and report.recompile_limit_hit is False


def test_a_plain_function_has_no_graph_break():
    report = _diagnose(plain, torch.ones(4), torch.ones(4))
    assert report.graph_breaks == 0 and report.graph_break_reasons == ()
    assert report.unique_graphs == 1
    assert report.compilations == 1 and report.compile_times_s.dynamo > 0


def not_a_tensor(x):
    return "hello"


def test_a_function_of_no_tensor_operation_compiles_no_graph_and_is_said():
    report = _diagnose(not_a_tensor, torch.ones(4))
    assert report.unique_graphs == 0 and diagnostics.no_graph(report)
    assert not diagnostics.no_graph(_diagnose(plain, torch.ones(4)))
    assert "nothing was compiled" in diagnostics.NO_GRAPH_WARNING


def test_recompiles_and_the_recompile_limit_are_detected(monkeypatch):
    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 2)
    shapes = [torch.ones(n) for n in (1, 2, 3, 4, 5)]
    report = _diagnose(plain, *shapes, dynamic=False)
    assert report.recompiles >= 1
    assert "size mismatch" in report.recompile_reasons[0]
    assert report.recompile_limit_hit is True
    assert report.graph_breaks == 0  # the limit is not a graph break
    assert diagnostics.RECOMPILE_LIMIT_WARNING == "hit the recompile limit: later calls ran eagerly"


def test_the_diff_ignores_what_happened_before_the_snapshot():
    torch.compile(branchy, backend="eager")(torch.ones(4))
    report = _diagnose(plain, torch.ones(3))
    assert report.graph_breaks == 0 and report.unique_graphs == 1


def test_explain_pass_counts_the_break():
    result = diagnostics.explain_pass(branchy, (torch.ones(4),))
    assert result.graph_break_count >= 1 and result.graph_count >= 2
    assert any("branchy" in reason for reason in result.break_reasons)


def test_fullgraph_break_classifies_as_graph_break():
    with pytest.raises(Exception) as info:
        torch.compile(branchy, backend="eager", fullgraph=True)(torch.ones(4))
    failure = classify(info.value, "compile", backend="eager", fullgraph=True)
    assert failure.kind == "graph_break"
    assert "Data-dependent branching" in failure.message and "in branchy" in failure.message
    assert "\n" not in failure.message and "Traceback" in failure.detail


def _item_branch(x):
    if x.sum().item() > 0:  # a branch on a tensor's value read as a Python number
        return x * 2
    return x - 1


def test_a_branch_on_an_items_value_under_fullgraph_is_a_graph_break_naming_its_line():
    """Dynamo raises this one as a UserError over a data-dependent guard, not as Unsupported: a user's model read
    "compile_error: inductor failed to compile: Consider annotating your code using torch._check*()", no line."""
    with pytest.raises(Exception) as info:
        torch.compile(_item_branch, backend="eager", fullgraph=True)(torch.ones(4))
    failure = classify(info.value, "compile", backend="eager", fullgraph=True)
    assert failure.kind == "graph_break", failure.message
    assert failure.message.startswith("the graph broke under fullgraph=True: Data-dependent branching at ")
    assert "in _item_branch (if x.sum().item() > 0:" in failure.message


def test_the_same_guard_raised_by_inductors_lowering_stays_a_compile_error():
    """Inductor raises a data-dependent guard from its own lowering too (pytorch#123793): a compile error, not a
    break of the user's graph; nor is the guard a graph break without fullgraph."""
    import sympy
    from torch._dynamo.exc import BackendCompilerFailed
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    guard = GuardOnDataDependentSymNode(sympy.Symbol("u0") > 3, "Could not guard on data-dependent expression u0 > 3")
    try:
        try:
            raise guard
        except GuardOnDataDependentSymNode as inner:
            raise BackendCompilerFailed(lambda *a: None, inner, None) from inner
    except BackendCompilerFailed as failed:
        assert classify(failed, "compile", backend="inductor", fullgraph=True).kind == "compile_error"
    assert classify(guard, "compile", backend="inductor", fullgraph=False).kind != "graph_break"


def test_out_of_memory_and_eager_errors_classify_by_type_and_stage():
    assert (
        classify(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"), "compiled").kind
        == "out_of_memory"
    )
    assert classify(RuntimeError("mat1 and mat2 shapes cannot be multiplied"), "eager").kind == "runtime_error"
    assert classify(RuntimeError("boom"), "compiled").kind == "runtime_error"
    assert classify(RuntimeError("boom"), "compile").kind == "compile_error"


def test_the_first_meaningful_line_of_a_compiler_error():
    text = (
        "CppCompileError: C++ compile error\n\nCommand:\ng++ /tmp/x.cpp -O3 -o x.so\n\nOutput:\n"
        "/tmp/x.cpp:12:5: error: 'foo' was not declared in this scope\n\n\n"
        "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace"
    )
    assert first_meaningful_line(text) == "/tmp/x.cpp:12:5: error: 'foo' was not declared in this scope"
    boiler = "backend='inductor' raised:\nLoweringException: no lowering for aten.foo\n\nSet TORCHDYNAMO_VERBOSE=1 ..."
    assert first_meaningful_line(boiler) == "LoweringException: no lowering for aten.foo"
