"""Where compile-lab keeps its config and data.

platformdirs' user dirs by default; ``COMPILE_LAB_HOME`` puts everything under one
directory instead (tests point it at a temporary directory).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["config_dir", "data_dir", "cache_dir", "config_file", "history_file", "runs_dir", "exports_dir",
           "locks_dir", "compile_cache_dir", "unwritable", "home_problem"]

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


def unwritable(*folders: Path) -> str | None:
    """Why compile-lab could not write into one of ``folders`` (one line naming it and what is in the way), else None.

    Checked before a run starts, without creating anything: a ``COMPILE_LAB_HOME`` that is a file, or a folder
    on a read-only disk, made each run fail inside inductor (``compile_error: ... NotADirectoryError``), which
    sends a user to debug torch.compile.
    """
    for folder in folders:
        target = folder.absolute()
        existing = next((p for p in (target, *target.parents) if p.exists()), None)
        if existing is None:
            continue
        if not existing.is_dir():
            return f"{folder}: {existing} is a file, not a folder"
        if not os.access(existing, os.W_OK | os.X_OK):
            what = "cannot be written" if existing == target else f"cannot be created in {existing}"
            return f"{folder}: {what} (permission denied or a read-only disk)"
    return None


def home_problem(needs_data: bool = True, needs_config: bool = False, needs_cache: bool = True) -> str | None:
    """:func:`unwritable` for the folders a run writes: the compile cache unless ``needs_cache`` is False (runs that
    compile on a cluster's nodes), the data dir unless ``needs_data`` is False (``--no-history``) and the config
    dir with ``needs_config`` (the app), said with the setting that chose them (one line, for a usage error)."""
    cache = "TORCHINDUCTOR_CACHE_DIR" if os.environ.get("TORCHINDUCTOR_CACHE_DIR") else "COMPILE_LAB_HOME"
    folders = [*([(compile_cache_dir(), cache)] if needs_cache else []),
               *([(data_dir(), "COMPILE_LAB_HOME")] if needs_data else []),
               *([(config_dir(), "COMPILE_LAB_HOME")] if needs_config else [])]
    for folder, setting in folders:
        problem = unwritable(folder)
        if problem is not None:
            chosen = setting if setting != "COMPILE_LAB_HOME" or _home() is not None else None
            allowed = f"{chosen} set to a folder compile-lab can write" if chosen else \
                "a folder compile-lab can write; COMPILE_LAB_HOME chooses another"
            return f"{problem} (allowed: {allowed})"
    return None
