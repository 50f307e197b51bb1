"""Where compile-lab keeps its config and data.

platformdirs' user dirs by default; ``COMPILE_LAB_HOME`` puts everything under one
directory instead (tests point it at a temporary directory).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["config_dir", "data_dir", "cache_dir", "config_file", "history_file", "runs_dir", "exports_dir",
           "locks_dir", "compile_cache_dir"]

APP_NAME = "compile-lab"


def _home() -> Path | None:
    value = os.environ.get("COMPILE_LAB_HOME")
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    """The directory of config.json (created on demand by writers, not here)."""
    home = _home()
    if home is not None:
        return home / "config"
    from platformdirs import user_config_path

    return user_config_path(APP_NAME)


def data_dir() -> Path:
    """The directory of the history, per-run raw files and exports."""
    home = _home()
    if home is not None:
        return home / "data"
    from platformdirs import user_data_path

    return user_data_path(APP_NAME)


def cache_dir() -> Path:
    """The directory of what compile-lab can always make again (inductor's caches for its runs)."""
    home = _home()
    if home is not None:
        return home / "cache"
    from platformdirs import user_cache_path

    return user_cache_path(APP_NAME)


def config_file() -> Path:
    """The app's config file (last used options, theme)."""
    return config_dir() / "config.json"


def history_file() -> Path:
    """The JSONL history of every finished or failed run."""
    return data_dir() / "history.jsonl"


def runs_dir() -> Path:
    """One file of per-iteration times per run, referenced from its history line."""
    return data_dir() / "runs"


def exports_dir() -> Path:
    """The default directory of CSV/JSON exports."""
    return data_dir() / "exports"


def locks_dir() -> Path:
    """Per-GPU lock files, so two compile-lab processes never measure on one GPU at once."""
    return data_dir() / "locks"


def compile_cache_dir() -> Path:
    """Where the workers' inductor caches live: under ``TORCHINDUCTOR_CACHE_DIR`` when the user set one (the disk
    they chose for compile caches), else under :func:`cache_dir`. The worker keeps one folder per set of precision
    flags beneath it (:mod:`tui.engine.worker.compile_cache`)."""
    chosen = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if chosen:
        return Path(chosen).expanduser() / APP_NAME
    return cache_dir() / "inductor"
