"""The worker's device resolution, in-process, with torch's CUDA queries faked (runs on any box)."""

from __future__ import annotations

import pytest

from tui.engine.options import OptionsError

torch = pytest.importorskip("torch")

from tui.engine.worker import envinfo, setup  # noqa: E402  (needs torch)

UUIDS = ["GPU-0a1b2c3d-0000-4000-8000-000000000001", "0A1B2C3D-0000-4000-8000-000000000002"]


@pytest.fixture
def two_gpus(monkeypatch):
    """Two visible GPUs whose uuids torch reports in different spellings."""
    chosen: list[int] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: len(UUIDS))
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    monkeypatch.setattr(envinfo, "gpu_uuid", lambda index: UUIDS[index])
    return chosen


def test_a_uuid_device_finds_its_gpu_whatever_the_spelling(two_gpus):
    assert setup.resolve_device("cuda:GPU-0a1b2c3d-0000-4000-8000-000000000002") == torch.device("cuda", 1)
    assert setup.resolve_device("cuda:GPU-0A1B2C3D-0000-4000-8000-000000000001") == torch.device("cuda", 0)
    assert two_gpus == [1, 0]


def test_an_unknown_uuid_names_the_visible_gpus(two_gpus):
    with pytest.raises(OptionsError, match="not among the visible GPUs") as info:
        setup.resolve_device("cuda:GPU-ffffffff-0000-4000-8000-000000000000")
    assert UUIDS[0] in str(info.value)
    assert two_gpus == []
