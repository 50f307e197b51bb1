"""One worker per GPU in the app: the device field's ``cuda:all``, a runner per GPU lane, which GPU runs what.

The device field offers ``cuda:all`` when the machine shows two GPUs or more
(:func:`tui.app.components.picker.device_choices`), and the sweep dialog a list of the GPUs to
use. Neither is a :class:`~tui.engine.options.RunOptions` device: :func:`split_device` turns the
text into the options' device (``cuda``: some GPU, the one the run gets is set when it starts) and
a pool (``cuda:0``, ``cuda:1``, ...) for :meth:`tui.engine.run.session.RunSession.submit`, which deals
the runs to free GPUs, one each.

:class:`LaneRunners` is the app session's ``runner_for``, the engine's wiring
(:class:`tui.engine.runner.wiring.LaneRunners`, the command line's too): the shared lane keeps the
app's runner (a single run, as ever), and each GPU lane of a pool gets a runner of its own made like
it (the same worker command and telemetry, which tests replace), pinned to whole cores near its GPU
(asked off the UI thread before the pool's runs are queued). The session closes every runner it made.

:func:`run_gpu` and :func:`run_labels` tell the GPU pane which GPU each running run has and
what to call it there. Imports no textual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from collections.abc import Sequence

from tui.present.option_fields import FIELDS_BY_KEY, differing, option_words, workload_word
from tui.engine.run.placement import POOL_ALL, is_pool, parse_device_pool
from tui.engine.runner import wiring
from tui.telemetry.model import normalize_uuid

if TYPE_CHECKING:
    from tui.engine.store.results import RunRecord
    from tui.telemetry.model import GpuSnapshot

__all__ = ["POOL_ALL", "POOL_DEVICE", "is_pool", "split_device", "visible_gpus", "LaneRunners", "run_gpu", "pool_names",
           "run_labels"]

POOL_DEVICE = "cuda"
"""The device of a pooled run's options until it starts (then the GPU it got, ``cuda:2``)."""


def visible_gpus(shown: int) -> int:
    """How many GPUs ``cuda:N`` can name: CUDA_VISIBLE_DEVICES' entries when set, else the ``shown``
    ones (the GPU pane's), as the runner resolves them (:class:`tui.engine.runner.gpu_lock.GpuResolver`)."""
    from tui.engine.runner.gpu_lock import visible_entries

    entries = visible_entries()
    return shown if entries is None else len(entries)


def split_device(device: str, gpus: int) -> tuple[str, tuple[str, ...]]:
    """``(the options' device, the pool)`` for a device field's text and the GPUs the machine shows.

    ``cuda:all`` or a list (``cuda:0,cuda:3``): ``("cuda", ("cuda:0", ...))``; a pool of one GPU is
    that GPU alone; anything else is itself with no pool. OptionsError (field ``device``) when the
    pool names no GPU or one that is not there.
    """
    if not is_pool(device):
        return device, ()
    pool = parse_device_pool(device, visible_gpus(gpus))
    return (pool[0], ()) if len(pool) == 1 else (POOL_DEVICE, pool)


class LaneRunners(wiring.LaneRunners):
    """The runner of each lane of the app's session (see the module docstring): the engine's
    :class:`~tui.engine.runner.wiring.LaneRunners`, each GPU lane's runner made like the app's.

    ``app`` has ``runner`` (the shared lane's) and ``telemetry``, and ``cluster`` with ``--cluster``.
    """

    def __init__(self, app: Any) -> None:
        base = app.runner
        self._app = app
        super().__init__(lambda: self._app.runner, self._like_the_apps,
                         telemetry=getattr(base, "telemetry", None) or app.telemetry,
                         cluster=getattr(app, "cluster", None), base_env=getattr(base, "env", None))

    def _like_the_apps(self, env: dict[str, str]) -> Any:
        """A GPU lane's runner: the app's worker command, telemetry and host sampling, no spare until runs wait."""
        from tui.engine.runner import WorkerRunner

        base = self._app.runner
        return WorkerRunner(worker_argv=getattr(base, "worker_argv", None), keep_spare=False,
                            telemetry=self.telemetry, env=env, sample_host=getattr(base, "sample_host", True))


def run_gpu(record: RunRecord, snapshots: Sequence[GpuSnapshot]) -> str | None:
    """The canonical uuid of the GPU ``record`` runs on, or None (a CPU run, a GPU not known yet).

    What the worker said (its GPU's uuid, or the CUDA_VISIBLE_DEVICES it was given) when it has
    started, else the device: ``cuda:GPU-<uuid>``, or ``cuda:N`` among ``snapshots`` as the runner
    resolves it.
    """
    env = record.env
    for said in (env.gpu_uuid, env.cuda_visible_devices):
        if said and str(said).strip().upper().startswith(("GPU-", "MIG-")) and "," not in str(said):
            return normalize_uuid(said)
    if env.gpu_uuid:
        return normalize_uuid(env.gpu_uuid)
    device = record.options.device
    if device.startswith("cuda:GPU-"):
        return normalize_uuid(device.partition(":")[2])
    if not device.startswith("cuda:") or not device[5:].isdigit():
        return None
    from tui.engine.runner.gpu_lock import GpuResolver

    resolved = GpuResolver(_Shown(snapshots)).resolve(device)
    return resolved if resolved and resolved.startswith(("gpu-", "mig-")) else None


class _Shown:
    """The GPU pane's last snapshots as a telemetry source (no NVML call)."""

    available = True

    def __init__(self, snapshots: Sequence[GpuSnapshot]) -> None:
        self._snapshots = list(snapshots)

    def snapshot(self, fields: Any = None) -> list[GpuSnapshot]:
        return self._snapshots

    def find(self, uuid: Any) -> GpuSnapshot | None:
        key = normalize_uuid(uuid)
        return next((s for s in self._snapshots if normalize_uuid(s.uuid) == key), None)


def pool_names(pool: Sequence[str], snapshots: Sequence[GpuSnapshot]) -> dict[str, str | None]:
    """Each pooled GPU's name from the pane's last snapshots, ``cuda:N`` resolved as the runner resolves it
    (CUDA_VISIBLE_DEVICES, then PCI order); no NVML call."""
    from tui.engine.runner.gpu_lock import pool_gpu_names

    return pool_gpu_names(pool, _Shown(snapshots))


def run_labels(records: Sequence[RunRecord]) -> dict[str, str]:
    """What the GPU pane calls each of the runs running now, by run id: the option fields that tell
    them apart (``reduce-overhead fullgraph``, a tune's candidates by their inductor options), else the workload, and
    ``#2`` for a group's second process."""
    differs = differing(record.options for record in records) - {"device"}
    alike = tuple(key for key in FIELDS_BY_KEY if key not in differs)
    labels = {}
    for record in records:
        options = record.options
        words = option_words(options, differs, skip=alike) or [workload_word(options)]
        if record.group_id is not None:
            words.append(f"#{record.repeat + 1}")
        labels[record.run_id] = " ".join(words)
    return labels
