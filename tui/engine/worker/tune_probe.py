"""``python -m tui.engine.worker.tune_probe KEY...``: which inductor options this torch has, as one JSON line.

The tuner's parent never imports torch (:mod:`tui.engine.runner.torch_probe` starts this in the worker's
interpreter). The line: ``{"torch": version, "options": {key: default or null}, "missing": [keys],
"modes": {mode: {option: value}}}``; a nested key (``triton.cudagraphs``) is looked up part by part in
``torch._inductor.config``; a default that JSON cannot hold is given as its ``repr``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

_MISSING = object()


def _lookup(config: Any, key: str) -> Any:
    node = config
    for part in key.split("."):
        node = getattr(node, part, _MISSING)
        if node is _MISSING:
            return _MISSING
    return node


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def probe(keys: list[str]) -> dict[str, Any]:
    """The report for ``keys`` (imports torch)."""
    import torch
    import torch._inductor as inductor
    import torch._inductor.config as config

    found, missing = {}, []
    for key in keys:
        value = _lookup(config, key)
        if value is _MISSING:
            missing.append(key)
        else:
            found[key] = _plain(value)
    modes: dict[str, Any] = {}
    lister = getattr(inductor, "list_mode_options", None)
    if lister is not None:
        modes = {mode: {k: _plain(v) for k, v in options.items()} for mode, options in lister().items()}
    # whether this torch can run a CUDA device at all (a CPU build cannot): the tuner refuses such a search up front
    return {"torch": torch.__version__, "options": found, "missing": missing, "modes": modes,
            "cuda": bool(torch.cuda.is_available())}


def main(argv: list[str] | None = None) -> int:
    print(json.dumps(probe(list(sys.argv[1:] if argv is None else argv))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
