"""tui.engine.explain.kernels: profiler events -> per-side kernel counts and the kernel diff, without torch.

The events below are what ``torch.profiler`` gave for pointwise (``sin(x * 2) + x``) on this
CPU with torch 2.13, flattened the way the worker flattens them (:func:`tui.engine.worker.profile.flatten`).
"""

from __future__ import annotations

import dataclasses

import pytest

from tui.engine.explain.kernels import (
    MAX_ROWS,
    KernelRow,
    Profile,
    SideProfile,
    kernel_diff,
    provenance_ops,
    regions,
    side_profile,
    top_kernels_text,
)
from tui.engine.explain.profile_types import RawEvent
from tui.engine.protocol import Profiled, decode, encode

CALLS = 2


def _eager_call() -> list[RawEvent]:
    return [
        RawEvent("aten::mul", self_us=20.0, total_us=67.0, top_op=True),
        RawEvent("aten::to", self_us=5.0, total_us=46.0),  # the Python scalar 2, inside aten::mul
        RawEvent("aten::_to_copy", self_us=29.0, total_us=41.0),
        RawEvent("aten::empty_strided", self_us=4.0, total_us=4.0),
        RawEvent("aten::copy_", self_us=8.0, total_us=8.0),
        RawEvent("aten::sin", self_us=2500.0, total_us=2500.0, top_op=True),
        RawEvent("aten::add", self_us=750.0, total_us=750.0, top_op=True),
    ]


def _compiled_call() -> list[RawEvent]:
    return [
        RawEvent("TorchDynamo Cache Lookup", self_us=20.0, total_us=20.0),
        RawEvent("Torch-Compiled Region: 0/0", self_us=68.0, total_us=120.0),
        RawEvent("Pregraph bytecode", self_us=5.0, total_us=5.0),
        RawEvent("AOTDispatcher Runtime Wrapper Prologue", self_us=9.0, total_us=9.0),
        RawEvent("## Call CompiledFxGraph fcxq4s4n ##", self_us=23.0, total_us=38.0),
        RawEvent("graph_0_cpp_fused_add_mul_sin_0", self_us=15.0, total_us=15.0),
        RawEvent("aten::empty_strided", self_us=1.0, total_us=1.0, top_op=True),  # an allocation: no kernel
    ]


MAPPING = {
    "preToPost": {"mul": ["mul"], "sin": ["sin"], "add": ["add"]},
    "postToPre": {"mul": ["mul"], "sin": ["sin"], "add": ["add"]},
    "cppCodeToPost": {"cpp_fused_add_mul_sin_0:1": ["add", "sin", "mul"]},
    "postToCppCode": {"add": ["cpp_fused_add_mul_sin_0:1"]},
    "version": 2.0,
}


def _sides() -> tuple[SideProfile, SideProfile]:
    eager = side_profile(_eager_call() * CALLS, CALLS, cuda=False, wall_s=0.01)
    compiled = side_profile(_compiled_call() * CALLS, CALLS, cuda=False)
    return eager, compiled


def test_pointwise_on_the_cpu_is_three_eager_ops_and_one_compiled_kernel_per_call():
    eager, compiled = _sides()
    assert (eager.kernels_per_call, eager.launches_per_call, eager.graph_launches_per_call) == (3, 3, 0)
    assert [row.name for row in eager.kernels] == ["aten::sin", "aten::add", "aten::mul"]
    assert eager.kernels[0] == KernelRow("aten::sin", calls=2, total_ms=5.0, share=pytest.approx(2500 / 3317))
    assert eager.kernel_ms_per_call == pytest.approx(3.317)
    assert eager.wall_ms_per_call == pytest.approx(5.0)
    assert (compiled.kernels_per_call, compiled.launches_per_call) == (1, 1)
    assert compiled.kernels == (KernelRow("graph_0_cpp_fused_add_mul_sin_0", 2, 0.03, 1.0),)
    assert compiled.wall_ms_per_call is None


def test_on_a_gpu_device_events_are_kernels_and_launches_are_counted_apart_from_graph_replays():
    events = [
        RawEvent("aten::mul", total_us=10.0, top_op=True),
        RawEvent("cudaLaunchKernel", total_us=4.0),
        RawEvent("void at::native::vectorized_elementwise_kernel<...>", device="cuda", self_us=3.0, total_us=3.0),
        RawEvent("cudaGraphLaunch", total_us=6.0),
        RawEvent("triton_poi_fused_add_mul_sin_0", device="cuda", self_us=1.0, total_us=1.0),
    ]
    side = side_profile(events, 1, cuda=True)
    assert (side.kernels_per_call, side.launches_per_call, side.graph_launches_per_call) == (2, 1, 1)
    assert side.kernel_ms_per_call == pytest.approx(0.004)
    assert [row.name for row in side.kernels][0].startswith("void at::native")


def test_the_kernel_diff_maps_the_fused_kernel_to_its_three_eager_ops():
    eager, compiled = _sides()
    (group,) = kernel_diff(MAPPING, eager, compiled)
    assert group.kernel == "cpp_fused_add_mul_sin_0"
    assert group.ops == ("aten::add", "aten::mul", "aten::sin")
    assert group.nodes == ("add", "sin", "mul")
    assert group.eager_ms_per_call == pytest.approx(3.317)
    assert group.compiled_ms_per_call == pytest.approx(0.015)


def test_the_kernel_diff_reads_fx_node_names_and_refuses_a_mapping_without_kernels():
    assert provenance_ops("mul_1") == "aten::mul" and provenance_ops("convolution") == "aten::convolution"
    eager, compiled = _sides()
    with pytest.raises(ValueError, match="no kernel entries"):
        kernel_diff({"preToPost": {}, "version": 2.0}, eager, compiled)
    triton = {"tritonCodeToPost": {"triton_poi_fused_mul_0:3": ["mul_1"], "extern_kernels.mm:4": []}}
    (group,) = kernel_diff(triton, eager, compiled)  # a kernel without nodes is left out
    assert (group.kernel, group.ops, group.compiled_ms_per_call) == ("triton_poi_fused_mul_0", ("aten::mul",), None)


def test_the_compact_cell_and_an_unavailable_profile():
    eager, compiled = _sides()
    profile = Profile(available=True, eager=eager, compiled=compiled)
    assert top_kernels_text(profile) == ("eager: aten::sin 75%, aten::add 23%, aten::mul 2%; "
                                         "compiled: graph_0_cpp_fused_add_mul_sin_0 100%")  # fmt: skip
    assert top_kernels_text(None) is None
    assert top_kernels_text(Profile(available=False, why="skipped")) is None


def test_a_profile_travels_on_its_event_and_is_checked_once():
    eager, compiled = _sides()
    profile = Profile(available=True, activities=("cpu",), calls=CALLS, profile_s=1.5, compile_s=1.25, eager=eager,
                      compiled=compiled, diff=kernel_diff(MAPPING, eager, compiled))  # fmt: skip
    assert decode(encode(Profiled(t=3.0, profile=profile))) == Profiled(t=3.0, profile=profile)
    decoded, problems = Profile.decode({"available": True, "eager": {"kernels_per_call": "three"}}, "profile")
    assert decoded.eager.kernels_per_call is None and problems and "kernels_per_call" in problems[0]


def test_a_side_needs_at_least_one_call():
    with pytest.raises(ValueError):
        side_profile([], 0, cuda=False)


def test_a_record_keeps_its_profile_through_json():
    from tui.engine.store.results import RunRecord

    eager, compiled = _sides()
    record = RunRecord("20261203-000000-abcdef")
    record.apply(Profiled(t=1.0, profile=Profile(available=True, eager=eager, compiled=compiled, profile_s=0.5)))
    again, problems = RunRecord.decode(record.to_json(samples=False))
    assert problems == [] and again.profile == record.profile
    assert RunRecord.decode({**record.to_json(samples=False), "profile": None})[0].profile is None


def _graph_break_call() -> list[RawEvent]:
    """One compiled call of the graph_break workload on the CPU (torch 2.13): region 1/0 inside 0/0."""
    return [
        RawEvent("TorchDynamo Cache Lookup", total_us=5.0),  # 0
        RawEvent("Torch-Compiled Region: 0/0", total_us=281.0),  # 1
        RawEvent("Pregraph bytecode", total_us=2.0, parent=1),  # 2
        RawEvent("## Call CompiledFxGraph fx5doewa ##", total_us=107.5, parent=1),  # 3
        RawEvent("graph_0_cpp_fused_gt_sin_sum_0", total_us=91.8, parent=3),  # 4
        RawEvent("aten::is_nonzero", total_us=1.8, top_op=True, parent=1),  # 5
        RawEvent("aten::item", total_us=0.9, parent=5),  # 6
        RawEvent("TorchDynamo Cache Lookup", total_us=2.9, parent=1),  # 7
        RawEvent("Torch-Compiled Region: 1/0", total_us=128.9, parent=1),  # 8
        RawEvent("## Call CompiledFxGraph fccl7lbe ##", total_us=93.6, parent=8),  # 9
        RawEvent("graph_1_cpp_fused_sub_0", total_us=82.0, parent=9),  # 10
    ]


def test_a_graph_break_shows_two_regions_by_exclusive_time_and_the_eager_code_between():
    call = _graph_break_call()
    events = call + [dataclasses.replace(e, parent=None if e.parent is None else e.parent + len(call)) for e in call]
    rows, between = regions(events, 2)
    assert [(r.name, r.calls) for r in rows] == [("Torch-Compiled Region: 0/0", 2), ("Torch-Compiled Region: 1/0", 2)]
    assert rows[0].exclusive_ms_per_call == pytest.approx((281.0 - 128.9) / 1e3)
    assert rows[0].graph_ms_per_call == pytest.approx(0.1075)
    assert rows[1].exclusive_ms_per_call == pytest.approx(0.1289) and rows[1].graph_ms_per_call == pytest.approx(0.0936)
    assert between == pytest.approx(0.0018)  # aten::is_nonzero, outside both graph calls
    side = side_profile(events, 2, cuda=False)
    assert side.kernels_per_call == 3  # two C++ kernels and the eager aten::is_nonzero between them
    assert regions(_compiled_call(), 1)[1] == 0.0 and regions(_eager_call(), 1) == ((), None)


def test_a_side_keeps_every_kernel_up_to_the_cap_and_the_diff_comes_by_compiled_time():
    events = [RawEvent(f"aten::op{i}", total_us=float(i + 1), top_op=True) for i in range(MAX_ROWS + 5)]
    side = side_profile(events, 1, cuda=False)
    assert len(side.kernels) == MAX_ROWS and side.kernels_per_call == MAX_ROWS + 5
    assert side.kernels[-1].name == "aten::op5"  # the five cheapest left out of the table, not of the counts
    compiled = side_profile([RawEvent("cpp_fused_a_0", total_us=1.0), RawEvent("cpp_fused_b_1", total_us=9.0)], 1,
                            cuda=False)  # fmt: skip
    mapping = {"cppCodeToPost": {"cpp_fused_a_0:1": ["op1"], "cpp_fused_b_1:2": ["op2"]}}
    assert [g.kernel for g in kernel_diff(mapping, side, compiled)] == ["cpp_fused_b_1", "cpp_fused_a_0"]


# Names as the profiler gave them on the H200 (torch 2.11, CNN b64; docs/gpu-runs/2026-12-03-session7).
H200_NAMES = {
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add"
    "<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1}>(int, "
    "at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<float> >(at::TensorIteratorBase&, "
    "at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1})": "elementwise_kernel (add)",
    "void sgemm_largek_lds64<true, false, 5, 5, 4, 4, 4, 34>(float*, float const*, float const*, int, int, int, "
    "int, int, int, float const*, float const*, float, float, int, int, int*, int*)": "sgemm_largek_lds64",
    "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, int>(int, float const*, long, long, long, "
    "int, int, int, int, int, int, int, int, int, int, float*, long*)": "max_pool_forward_nchw",
    "Memset (Device)": "Memset",
    "triton_poi_fused_convolution_relu_2": "triton_poi_fused_convolution_relu_2",
    "aten::sin": "aten::sin",
    "graph_0_cpp_fused_add_mul_sin_0": "graph_0_cpp_fused_add_mul_sin_0",
}


def test_short_kernel_names_keep_the_kernel_and_its_op_and_leave_plain_names_alone():
    from tui.engine.explain.kernels import short_kernel_name

    for name, short in H200_NAMES.items():
        assert short_kernel_name(name) == short


def test_eager_ops_on_a_gpu_take_the_device_time_of_the_kernels_under_them():
    """conv2d -> convolution -> cudnn_convolution launches two kernels: each op in the chain is charged both,
    so the diff finds 'aten::convolution' (the FX node's op) though eager called aten::conv2d."""
    from tui.engine.explain.kernels import KernelGroup, kernel_diff, side_profile
    from tui.engine.explain.profile_types import RawEvent

    events = [
        RawEvent("aten::conv2d", top_op=True, total_us=50.0),
        RawEvent("aten::convolution", parent=0, total_us=45.0),
        RawEvent("aten::cudnn_convolution", parent=1, total_us=40.0, device_us=30.0),
        RawEvent("cudaLaunchKernel", parent=2, total_us=5.0),
        RawEvent("aten::relu", top_op=True, total_us=10.0, device_us=4.0),
        RawEvent("sm80_xmma_fprop", device="cuda", self_us=20.0, total_us=20.0),
        RawEvent("nhwcToNchwKernel", device="cuda", self_us=10.0, total_us=10.0),
        RawEvent("elementwise_kernel", device="cuda", self_us=4.0, total_us=4.0),
    ]
    eager = side_profile(events, calls=1, cuda=True)
    ops = {row.name: row for row in eager.ops}
    assert ops["aten::conv2d"].total_ms == ops["aten::convolution"].total_ms == 0.030
    assert ops["aten::relu"].total_ms == 0.004
    assert abs(ops["aten::conv2d"].share - 30 / 34) < 1e-9  # shares over the top-level ops only
    compiled = side_profile([RawEvent("triton_poi_fused_convolution_relu_0", device="cuda", self_us=3.0,
                                      total_us=3.0)], calls=1, cuda=True)
    mapping = {"cppCodeToPost": {"triton_poi_fused_convolution_relu_0:1": ["convolution", "relu"]}}
    (group,) = kernel_diff(mapping, eager, compiled)
    assert group == KernelGroup(kernel="triton_poi_fused_convolution_relu_0", ops=("aten::convolution", "aten::relu"),
                                nodes=("convolution", "relu"), eager_ms_per_call=0.034, compiled_ms_per_call=0.003)


def test_on_the_cpu_an_extern_kernel_and_a_decomposed_op_get_their_time_on_both_sides():
    """The mlp's Kernels tab on the CPU gave no group both sides: ``extern_kernels.addmm`` is ``aten::addmm`` in
    the compiled profile, and ``cpp_fused_gelu_0``'s nodes (``mul``, ``erf``, ``add``) decompose the
    ``aten::gelu`` eager ran."""
    eager_call = [RawEvent("aten::linear", self_us=5.0, total_us=400.0, top_op=True),
                  RawEvent("aten::addmm", self_us=395.0, total_us=395.0, parent=0),
                  RawEvent("aten::gelu", self_us=60.0, total_us=60.0, top_op=True)]
    compiled_call = [RawEvent("aten::addmm", self_us=380.0, total_us=380.0, top_op=True),
                     RawEvent("graph_1_cpp_fused_gelu_0", self_us=40.0, total_us=40.0)]
    eager = side_profile(eager_call * CALLS, CALLS, cuda=False)
    compiled = side_profile(compiled_call * CALLS, CALLS, cuda=False)
    mapping = {"preToPost": {"input_1": ["permute", "addmm"], "input_2": ["mul", "mul_1", "erf", "add", "mul_2"]},
               "cppCodeToPost": {"extern_kernels.addmm:1": ["addmm"],
                                 "cpp_fused_gelu_0:2": ["mul_2", "mul", "add", "erf", "mul_1"]}}
    groups = {g.kernel: g for g in kernel_diff(mapping, eager, compiled)}
    assert groups["extern_kernels.addmm"].eager_ms_per_call == pytest.approx(0.395)
    assert groups["extern_kernels.addmm"].compiled_ms_per_call == pytest.approx(0.380)
    gelu = groups["cpp_fused_gelu_0"]
    assert gelu.ops == ("aten::add", "aten::erf", "aten::mul")  # what inductor fused, as its nodes say
    assert (gelu.eager_ms_per_call, gelu.compiled_ms_per_call) == (pytest.approx(0.060), pytest.approx(0.040))


def test_a_fused_kernels_name_lists_whole_op_names_only():
    from tui.engine.explain.kernels import named_ops

    ops = ["aten::gelu", "aten::_softmax", "aten::relu", "aten::max_pool2d_with_indices", "aten::max", "aten::add"]
    assert named_ops("cpp_fused_gelu_0", ops) == ("aten::gelu",)
    assert named_ops("triton_per_fused__softmax_1", ops) == ("aten::_softmax",)
    assert named_ops("triton_poi_fused_max_pool2d_with_indices_relu_6", ops) == (
        "aten::max_pool2d_with_indices", "aten::relu")  # not aten::max, a piece of another op's name
    assert named_ops("extern_kernels.addmm", ops) == () and named_ops("cpp_fused_gelu", ops) == ()
