"""Telemetry layer: NvmlSource against a fake pynvml module, FakeSource, RunSampler, uuids."""

from __future__ import annotations

import os
import sys
import time
import types
import uuid as uuid_mod
from collections import Counter
from types import SimpleNamespace

import pytest

from tui.telemetry.fake import FakeSource
from tui.telemetry.model import GpuProcess, normalize_uuid, nvml_uuid, throttle_words
from tui.telemetry.nvml import NvmlSource
from tui.telemetry.sampler import FIELDS as SAMPLER_FIELDS
from tui.telemetry.sampler import RunSampler

NOT_SUPPORTED, FUNCTION_NOT_FOUND, GPU_IS_LOST, NOT_FOUND, LIB_NOT_FOUND, UNKNOWN = 3, 13, 15, 6, 12, 999

UUID_A = "GPU-aaaaaaaa-0000-4000-8000-000000000000"
UUID_B = "GPU-bbbbbbbb-1111-4111-8111-111111111111"


# -- a fake pynvml module ------------------------------------------------------------------


class FakeNVMLError(Exception):
    """Like pynvml.NVMLError: the return code in ``.value``."""

    TEXT = {NOT_SUPPORTED: "Not Supported", GPU_IS_LOST: "GPU is lost", LIB_NOT_FOUND: "NVML Shared Library Not Found"}

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return self.TEXT.get(self.value, f"NVML error {self.value}")


class FakeNvml(types.ModuleType):
    """A pynvml stand-in: per-(function, gpu) call counts and scripted failures.

    ``faults[(function, gpu_index)]`` is a list of NVML codes (or None for success) consumed one
    per call; an int means that code on every call.
    """

    def __init__(self, uuids: list[str], *, init_error: int | None = None, extra_uuids: tuple[str, ...] = ()) -> None:
        super().__init__("pynvml")
        self.uuids = uuids
        self.extra_uuids = extra_uuids  # known to HandleByUUID only (like MIG instances)
        self.init_error = init_error
        self.calls: Counter = Counter()
        self.faults: dict[tuple[str, int], object] = {}
        self.uuid_lookups: list[str] = []
        self.NVMLError = FakeNVMLError
        self.NVML_CLOCK_SM, self.NVML_CLOCK_MEM, self.NVML_TEMPERATURE_GPU = 1, 2, 0
        values = {
            "nvmlDeviceGetIndex": lambda i: i,
            "nvmlDeviceGetName": lambda i: f"Test GPU {'AB'[i % 2]}",
            "nvmlDeviceGetMemoryInfo": lambda i: SimpleNamespace(total=80 * 1024**3, used=(i + 1) * 1024**3),
            "nvmlDeviceGetEnforcedPowerLimit": lambda i: 700_000,
            "nvmlDeviceGetMaxClockInfo": lambda i, kind: 1980,
            "nvmlDeviceGetUtilizationRates": lambda i: SimpleNamespace(gpu=90 + i, memory=40),
            "nvmlDeviceGetTemperature": lambda i, sensor: 55,
            "nvmlDeviceGetPowerUsage": lambda i: 412_500,
            "nvmlDeviceGetClockInfo": lambda i, kind: 1755 if kind == 1 else 2619,
            "nvmlDeviceGetPerformanceState": lambda i: 0,
            "nvmlDeviceGetCurrentClocksEventReasons": lambda i: 0x4 | 0x1,
            "nvmlDeviceGetCurrentClocksThrottleReasons": lambda i: 0x20,
            "nvmlDeviceGetComputeRunningProcesses": lambda i: [
                SimpleNamespace(pid=os.getpid(), usedGpuMemory=2 * 1024**3),
                SimpleNamespace(pid=999_999_999, usedGpuMemory=None),
            ],
            "nvmlDeviceGetTotalEnergyConsumption": lambda i: 123_456,
            "nvmlDeviceGetUUID": lambda i: self._all()[i],
            # GPU 0 near CPUs 0-1 and 64 (a second mask word), GPU 1 near CPUs 2-3
            "nvmlDeviceGetCpuAffinity": lambda i, words: ([0b11, 1] if i == 0 else [0b1100, 0])[:words],
        }
        for name, fn in values.items():
            setattr(self, name, self._wrap(name, fn))

    def _all(self) -> list[str]:
        return list(self.uuids) + list(self.extra_uuids)

    def _wrap(self, name, fn):
        def call(handle, *args):
            index = handle.index
            self.calls[(name, index)] += 1
            fault = self.faults.get((name, index))
            if isinstance(fault, list):
                fault = fault.pop(0) if fault else None
            if fault is not None:
                raise FakeNVMLError(fault)
            return fn(index, *args)

        return call

    def nvmlInit(self):
        self.calls[("nvmlInit", -1)] += 1
        if self.init_error is not None:
            raise FakeNVMLError(self.init_error)

    def nvmlShutdown(self):
        self.calls[("nvmlShutdown", -1)] += 1

    def nvmlDeviceGetCount(self):
        return len(self.uuids)

    def nvmlDeviceGetHandleByIndex(self, index):
        return SimpleNamespace(index=index)

    def nvmlDeviceGetHandleByUUID(self, uuid):
        self.uuid_lookups.append(uuid)
        if uuid not in self._all():
            raise FakeNVMLError(NOT_FOUND)
        return SimpleNamespace(index=self._all().index(uuid))

    def count(self, name: str, index: int = 0) -> int:
        return self.calls[(name, index)]


@pytest.fixture
def fake_nvml(monkeypatch):
    """Install a two-GPU fake pynvml as ``sys.modules["pynvml"]``."""
    module = FakeNvml([UUID_A, UUID_B])
    monkeypatch.setitem(sys.modules, "pynvml", module)
    return module


# -- model ---------------------------------------------------------------------------------


def test_normalize_uuid_accepts_nvml_torch_and_uuid_objects():
    canonical = "gpu-aaaaaaaa-0000-4000-8000-000000000000"
    assert normalize_uuid(UUID_A) == canonical
    assert normalize_uuid(UUID_A.upper()) == canonical
    assert normalize_uuid("aaaaaaaa-0000-4000-8000-000000000000") == canonical
    assert normalize_uuid(uuid_mod.UUID("aaaaaaaa-0000-4000-8000-000000000000")) == canonical
    assert normalize_uuid(uuid_mod.UUID("aaaaaaaa-0000-4000-8000-000000000000").bytes) == canonical
    assert normalize_uuid(b"GPU-aaaaaaaa-0000-4000-8000-000000000000 ") == canonical
    assert normalize_uuid("MIG-1234") == "mig-1234"
    assert normalize_uuid(None) is None and normalize_uuid("  ") is None
    assert nvml_uuid("aaaaaaaa-0000-4000-8000-000000000000") == UUID_A


def test_throttle_words_in_bit_order_with_unknown_bits_kept():
    assert throttle_words(0) == ()
    assert throttle_words(None) is None
    assert throttle_words(0x1 | 0x4 | 0x40) == ("GPU idle", "SW power cap", "HW thermal slowdown")
    assert throttle_words(0x80 | 0x100) == ("HW power brake slowdown", "display clock setting")
    assert throttle_words(0x200) == ("reason 0x200",)


# -- NvmlSource ----------------------------------------------------------------------------


def test_nvml_source_on_this_machine_never_raises():
    source = NvmlSource()
    if source.available:  # a GPU machine: it must report its GPUs
        snaps = source.snapshot()
        assert snaps and all(s.uuid and s.uuid.startswith(("gpu-", "mig-")) for s in snaps)
        assert source.sample(snaps[0].uuid).uuid == snaps[0].uuid
    else:
        assert source.reason
        assert source.snapshot() == []
        assert source.sample(UUID_A) is None
        assert source.find(UUID_A) is None
    source.close()


def test_nvml_missing_module_is_a_reason_not_an_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes `import pynvml` raise ImportError
    source = NvmlSource()
    assert source.available is False
    assert source.reason == "nvidia-ml-py is not installed"
    assert source.snapshot() == []


def test_nvml_init_failure_gives_the_nvml_text(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([UUID_A], init_error=LIB_NOT_FOUND))
    source = NvmlSource()
    assert not source.available
    assert source.reason.startswith("NVML Shared Library Not Found")
    assert source.snapshot() == [] and source.sample(UUID_A) is None


def test_no_gpu_is_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([]))
    source = NvmlSource()
    assert not source.available and "no NVIDIA GPU" in source.reason


def test_snapshot_fields_and_units(fake_nvml):
    source = NvmlSource()
    a, b = source.snapshot()
    assert a.uuid == normalize_uuid(UUID_A) and a.index == 0 and a.name == "Test GPU A"
    assert (a.util_gpu_pct, a.util_mem_pct) == (90, 40)
    assert (a.mem_used_mb, a.mem_total_mb) == (1024.0, 81920.0)
    assert (a.temp_c, a.power_w, a.power_limit_w) == (55, 412.5, 700.0)
    assert (a.sm_clock_mhz, a.sm_clock_max_mhz, a.mem_clock_mhz, a.pstate) == (1755, 1980, 2619, "P0")
    assert a.throttle_reasons == ("GPU idle", "SW power cap")
    assert a.slowdown_reasons() == ("SW power cap",)
    assert a.energy_mj == 123_456 and a.timestamp is not None and not a.lost
    me = GpuProcess(pid=os.getpid(), name=open(f"/proc/{os.getpid()}/comm").read().strip(), used_mb=2048.0)
    assert a.processes == (me, GpuProcess(pid=999_999_999, name=None, used_mb=None))
    assert a.processes_except({os.getpid()}) == (GpuProcess(pid=999_999_999),)
    assert b.uuid == normalize_uuid(UUID_B) and b.util_gpu_pct == 91


def test_slow_fields_are_read_once(fake_nvml):
    source = NvmlSource()
    for _ in range(4):
        source.snapshot()
    assert fake_nvml.count("nvmlDeviceGetName") == 1
    assert fake_nvml.count("nvmlDeviceGetEnforcedPowerLimit") == 1
    assert fake_nvml.count("nvmlDeviceGetMaxClockInfo") == 1
    assert fake_nvml.count("nvmlDeviceGetPowerUsage") == 4


def test_not_supported_field_is_none_and_never_asked_again(fake_nvml):
    fake_nvml.faults[("nvmlDeviceGetTemperature", 0)] = NOT_SUPPORTED
    fake_nvml.faults[("nvmlDeviceGetComputeRunningProcesses", 0)] = NOT_SUPPORTED
    source = NvmlSource()
    snaps = [source.snapshot() for _ in range(3)]
    assert [s[0].temp_c for s in snaps] == [None, None, None]
    assert [s[0].processes for s in snaps] == [None, None, None]
    assert fake_nvml.count("nvmlDeviceGetTemperature", 0) == 1
    assert fake_nvml.count("nvmlDeviceGetComputeRunningProcesses", 0) == 1
    # Only that field of that GPU: everything else is still read.
    assert all(s[0].power_w == 412.5 and s[1].temp_c == 55 for s in snaps)
    assert fake_nvml.count("nvmlDeviceGetTemperature", 1) == 3


def test_other_errors_are_none_for_one_poll_only(fake_nvml):
    fake_nvml.faults[("nvmlDeviceGetPowerUsage", 0)] = [UNKNOWN, None]
    source = NvmlSource()
    first, second = source.sample(UUID_A), source.sample(UUID_A)
    assert first.power_w is None and second.power_w == 412.5
    assert fake_nvml.count("nvmlDeviceGetPowerUsage", 0) == 2


def test_clock_reasons_fall_back_to_the_throttle_api(fake_nvml):
    fake_nvml.faults[("nvmlDeviceGetCurrentClocksEventReasons", 0)] = FUNCTION_NOT_FOUND
    source = NvmlSource()
    for _ in range(3):
        snap = source.sample(UUID_A)
        assert snap.throttle_reasons == ("SW thermal slowdown",)
    assert fake_nvml.count("nvmlDeviceGetCurrentClocksEventReasons", 0) == 1
    assert fake_nvml.count("nvmlDeviceGetCurrentClocksThrottleReasons", 0) == 3


def test_old_binding_without_the_event_api(fake_nvml):
    del fake_nvml.nvmlDeviceGetCurrentClocksEventReasons
    assert NvmlSource().sample(UUID_B).throttle_reasons == ("SW thermal slowdown",)


def test_lost_gpu_is_marked_and_left_alone(fake_nvml):
    fake_nvml.faults[("nvmlDeviceGetUtilizationRates", 0)] = [None, GPU_IS_LOST]
    source = NvmlSource()
    assert not source.snapshot()[0].lost
    lost, other = source.snapshot()
    assert lost.lost and lost.uuid == normalize_uuid(UUID_A) and lost.name == "Test GPU A"
    assert lost.power_w is None and lost.temp_c is None
    assert not other.lost and other.power_w == 412.5
    before = sum(n for (name, index), n in fake_nvml.calls.items() if index == 0)
    again = source.sample(UUID_A)
    assert again.lost
    assert sum(n for (name, index), n in fake_nvml.calls.items() if index == 0) == before  # not queried
    assert source.find(UUID_A).lost


def test_gpus_are_matched_by_uuid_in_any_form(fake_nvml):
    source = NvmlSource()
    torch_form = UUID_B[4:].upper()  # what torch may print: no prefix
    assert source.sample(torch_form).name == "Test GPU B"
    assert source.sample(uuid_mod.UUID(UUID_B[4:])).index == 1
    assert source.find(UUID_B.lower()).name == "Test GPU B"
    assert source.find(UUID_B).util_gpu_pct is None  # find() does not poll
    assert fake_nvml.count("nvmlDeviceGetUtilizationRates", 1) == 2
    # An unknown uuid is asked of NVML by uuid (in NVML's form) and is simply not found.
    assert source.sample("cccccccc-2222-4222-8222-222222222222") is None
    assert fake_nvml.uuid_lookups == ["GPU-cccccccc-2222-4222-8222-222222222222"]


def test_sample_reads_only_the_fields_asked_for(fake_nvml):
    source = NvmlSource()
    snap = source.sample(UUID_A, fields=SAMPLER_FIELDS)
    assert (snap.sm_clock_mhz, snap.temp_c, snap.power_w, snap.energy_mj) == (1755, 55, 412.5, 123_456)
    assert snap.throttle_reasons == ("GPU idle", "SW power cap")
    assert snap.name == "Test GPU A" and snap.power_limit_w == 700.0  # cached slow fields stay
    assert snap.util_gpu_pct is None and snap.processes is None and snap.mem_used_mb is None
    for function in (
        "nvmlDeviceGetUtilizationRates",
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetPerformanceState",
    ):
        assert fake_nvml.count(function) == 0, function
    assert fake_nvml.count("nvmlDeviceGetClockInfo") == 1  # the SM clock, not the memory clock


def test_snapshot_without_the_energy_counter(fake_nvml):
    snaps = NvmlSource().snapshot(fields=("temp_c", "processes"))
    assert [s.temp_c for s in snaps] == [55, 55] and all(s.energy_mj is None for s in snaps)
    assert fake_nvml.count("nvmlDeviceGetTotalEnergyConsumption", 0) == 0
    assert fake_nvml.count("nvmlDeviceGetComputeRunningProcesses", 1) == 1


def test_a_gpu_not_enumerated_is_found_by_uuid(monkeypatch):
    mig = "MIG-dddddddd-3333-4333-8333-333333333333"
    module = FakeNvml([UUID_A], extra_uuids=(mig,))
    monkeypatch.setitem(sys.modules, "pynvml", module)
    source = NvmlSource()
    assert len(source.snapshot()) == 1
    snap = source.sample(mig.lower())
    assert snap is not None and snap.uuid == mig.lower() and snap.index == 1
    assert module.uuid_lookups == [mig]


def test_close_shuts_nvml_down_and_reinitialises_later(fake_nvml):
    source = NvmlSource()
    source.snapshot()
    source.close()
    assert fake_nvml.count("nvmlShutdown", -1) == 1
    assert len(source.snapshot()) == 2
    assert fake_nvml.count("nvmlInit", -1) == 2


# -- FakeSource ----------------------------------------------------------------------------


def test_fake_source_is_deterministic():
    one, two = FakeSource(gpus=2, time_step_s=0.1), FakeSource(gpus=2, time_step_s=0.1)
    for _ in range(3):
        assert one.snapshot() == two.snapshot()
    snap = FakeSource(gpus=2).snapshot()
    assert [s.name for s in snap] == ["Fake H200", "Fake H200"]
    assert len({s.uuid for s in snap}) == 2 and all(s.uuid.startswith("gpu-") for s in snap)
    frozen = FakeSource(vary=False)
    assert frozen.snapshot()[0].temp_c == frozen.snapshot()[0].temp_c


def test_fake_source_faults_and_scripts():
    source = FakeSource(gpus=2)
    uuid = source.uuids[0]
    source.set_field(0, temp_c=None, throttle_reasons=("SW power cap",))
    source.script(uuid, sm_clock_mhz=[1500.0, 1400.0])
    first, second, third = (source.sample(uuid) for _ in range(3))
    assert first.temp_c is None and first.throttle_reasons == ("SW power cap",)
    assert (first.sm_clock_mhz, second.sm_clock_mhz, third.sm_clock_mhz) == (1500.0, 1400.0, 1400.0)
    source.clear_field(0, "temp_c")
    assert source.sample(uuid).temp_c is not None
    source.raise_on_poll(RuntimeError("boom"), count=1)
    with pytest.raises(RuntimeError):
        source.snapshot()
    assert len(source.snapshot()) == 2
    source.lose(1)
    lost = source.sample(source.uuids[1])
    assert lost.lost and lost.name == "Fake H200" and lost.power_w is None
    with pytest.raises(ValueError):
        source.set_field(0, not_a_field=1)
    source.make_unavailable("test says so")
    assert source.snapshot() == [] and source.reason == "test says so" and not source.available
    assert source.calls == 8


def test_fake_source_cost_is_spent():
    source = FakeSource(cost_s=0.005)
    start = time.perf_counter()
    source.snapshot()
    assert time.perf_counter() - start >= 0.005


# -- RunSampler ----------------------------------------------------------------------------


def test_sampler_summary_from_scripted_samples():
    source = FakeSource(time_step_s=0.5)
    uuid = source.uuids[0]
    source.script(
        uuid,
        sm_clock_mhz=[1980.0, 1500.0, 1700.0, 1980.0],
        temp_c=[60.0, 83.0, 70.0, 65.0],
        power_w=[300.0, 700.0, 500.0, 500.0],
        energy_mj=[10_000.0, 10_250.0, 10_600.0, 10_850.0],
        throttle_reasons=[("GPU idle",), ("SW power cap", "HW slowdown"), ("SW power cap",), ()],
    )
    sampler = RunSampler(source, uuid.upper())
    assert all(sampler.sample_once() for _ in range(4))
    summary = sampler.summary()
    assert summary.samples == 4
    assert summary.sm_clock_mean_mhz == pytest.approx((1980 + 1500 + 1700 + 1980) / 4)
    assert summary.sm_clock_min_mhz == 1500.0
    assert summary.temp_max_c == 83.0
    assert summary.power_mean_w == 500.0
    assert summary.energy_j == pytest.approx(0.85) and summary.energy_from == "counter"
    assert summary.throttle_reasons == ("HW slowdown", "SW power cap")
    assert summary.errors == 0 and summary.gpu_lost is False


def test_sampler_integrates_power_without_an_energy_counter():
    source = FakeSource(time_step_s=0.5)
    uuid = source.uuids[0]
    source.set_field(0, energy_mj=None)
    source.script(uuid, power_w=[100.0, 300.0, 300.0])
    sampler = RunSampler(source, uuid)
    for _ in range(3):
        sampler.sample_once()
    summary = sampler.summary()
    # trapezoids: (100+300)/2*0.5 + (300+300)/2*0.5
    assert summary.energy_j == pytest.approx(250.0) and summary.energy_from == "power"


def test_sampler_with_nothing_measured():
    source = FakeSource()
    source.set_field(0, sm_clock_mhz=None, temp_c=None, power_w=None, energy_mj=None, throttle_reasons=None)
    sampler = RunSampler(source, source.uuids[0])
    sampler.sample_once()
    summary = sampler.summary()
    assert summary.samples == 1
    assert summary.sm_clock_mean_mhz is None and summary.temp_max_c is None
    assert summary.energy_j is None and summary.throttle_reasons == ()
    assert RunSampler(source, source.uuids[0]).summary().samples == 0


def test_sampler_survives_a_raising_source():
    source = FakeSource(time_step_s=0.1)
    sampler = RunSampler(source, source.uuids[0], max_errors=3)
    source.raise_on_poll(RuntimeError("NVML hiccup"), count=2)
    results = [sampler.sample_once() for _ in range(4)]
    assert results == [False, False, True, True]
    source.raise_on_poll(RuntimeError("NVML gone"), count=None)
    assert [sampler.sample_once() for _ in range(5)] == [False] * 5
    assert source.calls == 7  # gave up after three failures in a row
    summary = sampler.stop()
    assert summary.samples == 2 and summary.errors == 5
    assert summary.last_error == "RuntimeError: NVML gone"


def test_sampler_drops_a_field_it_cannot_use():
    source = FakeSource(time_step_s=0.1)
    source.set_field(0, sm_clock_mhz="fast")
    sampler = RunSampler(source, source.uuids[0])
    sampler.sample_once()
    sampler.sample_once()
    summary = sampler.summary()
    assert summary.sm_clock_mean_mhz is None and summary.sm_clock_min_mhz is None
    assert summary.temp_max_c is not None and summary.samples == 2


def test_sampler_asks_for_its_fields_and_accepts_sources_without_them():
    source = FakeSource(time_step_s=0.1)
    snap = source.sample(source.uuids[0], fields=SAMPLER_FIELDS)
    assert snap.temp_c is not None and snap.util_gpu_pct is None and snap.processes is None

    class UuidOnly:
        def __init__(self) -> None:
            self.calls = 0

        def sample(self, uuid):
            self.calls += 1
            return source.sample(uuid)

    plain = UuidOnly()
    sampler = RunSampler(plain, source.uuids[0])
    assert sampler.sample_once() and sampler.sample_once()
    assert plain.calls == 2 and sampler.summary().samples == 2


def test_sampler_stops_on_a_lost_or_unknown_gpu():
    source = FakeSource()
    sampler = RunSampler(source, source.uuids[0])
    assert sampler.sample_once()
    source.lose(0)
    assert not sampler.sample_once() and not sampler.sample_once()
    assert source.calls == 2 and sampler.summary().gpu_lost is True
    unknown = RunSampler(source, "gpu-does-not-exist")
    assert not unknown.sample_once()
    assert unknown.summary().last_error == "GPU not found"


def test_sampler_thread_samples_until_stopped():
    source = FakeSource(time_step_s=0.1)
    sampler = RunSampler(source, source.uuids[0], hz=200).start()
    assert sampler.running
    assert source.wait_for_calls(5, timeout=10)
    summary = sampler.stop()
    assert not sampler.running
    assert summary.samples >= 6  # the five awaited plus the last one taken at stop
    assert summary.samples == source.calls
    assert summary.energy_from == "counter" and summary.energy_j > 0
    calls = source.calls
    assert sampler.stop().samples == calls  # idempotent, no more polls


def test_sampler_thread_reads_the_energy_counter_only_at_both_ends():
    class Recording(FakeSource):
        def __init__(self) -> None:
            super().__init__(time_step_s=0.1)
            self.asked: list = []

        def sample(self, uuid, fields=None):
            self.asked.append(fields)
            return super().sample(uuid, fields)

    source = Recording()
    sampler = RunSampler(source, source.uuids[0], hz=200).start()
    assert source.wait_for_calls(6, timeout=10)
    summary = sampler.stop()
    with_energy = ["energy_mj" in fields for fields in source.asked]
    assert with_energy[0] and with_energy[-1] and not any(with_energy[1:-1])
    assert summary.energy_from == "counter" and summary.energy_j > 0
    assert summary.samples == len(source.asked)


def test_sampler_as_context_manager():
    source = FakeSource()
    with RunSampler(source, source.uuids[0], hz=100) as sampler:
        assert source.wait_for_calls(1, timeout=10)
    assert not sampler.running and sampler.summary().samples >= 2


def test_cpu_affinity_reads_every_mask_word_and_a_missing_function_is_none(fake_nvml):
    source = NvmlSource()
    try:
        if (os.cpu_count() or 1) >= 64:
            assert source.cpu_affinity(UUID_A) == frozenset({0, 1, 64})
        else:
            assert source.cpu_affinity(UUID_A) == frozenset({0, 1})
        assert source.cpu_affinity(UUID_B) == frozenset({2, 3})
        assert source.cpu_affinity("GPU-ffffffff-0000-4000-8000-000000000000") is None
        fake_nvml.faults[("nvmlDeviceGetCpuAffinity", 1)] = NOT_SUPPORTED
        source.close()
        assert source.cpu_affinity(UUID_B) is None
    finally:
        source.close()
