"""Which structured-trace artifacts inductor emits on this torch, with provenance tracking on.

A probe for issue 13 item 2 (the kernel diff): compile a small function with
``trace.provenance_tracking_level = 1`` and a handler on torch's structured trace log, then print
every artifact name seen (and how big), and the config's provenance attributes.
Usage: python3 benchmarks/probe_provenance.py [cuda|cpu]
"""

import logging
import sys

import torch
import torch._inductor.config as config
from torch._logging._internal import trace_log


class Catch(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.seen = []

    def emit(self, record):
        metadata = getattr(record, "metadata", None) or {}
        artifact = metadata.get("artifact") or {}
        payload = getattr(record, "payload", None) or ""
        self.seen.append((artifact.get("name") or ",".join(sorted(metadata)), len(payload), payload[:300]))


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu")
    print("torch", torch.__version__, "device", device)
    print("provenance attrs:", [a for a in dir(config.trace) if "prov" in a.lower()])
    catcher = Catch()
    trace_log.addHandler(catcher)
    trace_log.setLevel(logging.DEBUG)
    patch = {"trace.provenance_tracking_level": 1} if hasattr(config.trace, "provenance_tracking_level") else {}
    if not patch and hasattr(config.trace, "provenance_tracking"):
        patch = {"trace.provenance_tracking": True}
    print("patch:", patch)
    x = torch.randn(256, 256, device=device)
    with config.patch(patch):
        fn = torch.compile(lambda t: torch.sin(t) * t + t, fullgraph=True)
        fn(x)
    trace_log.removeHandler(catcher)
    names = {}
    for name, size, head in catcher.seen:
        names.setdefault(name, []).append((size, head))
    for name, items in names.items():
        print(f"{name}: {len(items)} record(s), sizes {[s for s, _ in items][:5]}")
        if "prov" in name.lower() or "mapping" in name.lower():
            print("   ", items[0][1])


if __name__ == "__main__":
    main()
