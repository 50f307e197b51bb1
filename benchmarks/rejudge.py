"""Re-judge recorded runs: rebuild each run's (and each --repeat group's) verdict from its samples.

A JSON export keeps every per-iteration time, so a change to the verdict's rules can be checked
against measurements already taken, without a GPU. The verdicts come from the current code and
the policy each run recorded (its noise threshold and limits).

    python3 benchmarks/rejudge.py docs/gpu-runs/2026-12-03-session6/repeat_cnn_1.json ...
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from tui.engine.store.repeats import summarize_group
from tui.engine.store.results import RunRecord


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def rows(path: str) -> list[str]:
    """One markdown row per group (or lone run) of the JSON export at ``path``."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    groups: dict[str, list[RunRecord]] = defaultdict(list)
    for item in data["runs"]:
        record = RunRecord.from_json(item)
        groups[record.group_id or record.run_id].append(record)
    out = []
    for members in groups.values():
        group = summarize_group(members)
        first = members[0].options
        low, high = ((group.speedup_xproc_ci_low, group.speedup_xproc_ci_high) if len(members) > 1
                     else (members[0].summary().speedup_ci_low, members[0].summary().speedup_ci_high))
        cells = [path.rsplit("/", 1)[-1], first.workload, first.mode, str(group.done), group.verdict or "",
                 _fmt(group.speedup), f"[{_fmt(low)}, {_fmt(high)}]", group.host_verdict or "",
                 _fmt(group.host_speedup), "; ".join(group.noise_reasons + group.host_noise_reasons)[:300]]
        out.append("| " + " | ".join(cells) + " |")
    return out


def main() -> None:
    """Print the re-judged table for every file named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="JSON exports (compile-lab ... --json PATH)")
    args = parser.parse_args()
    print(
        "| file | workload | mode | processes | verdict | speedup | interval | host verdict | host speedup | noisy "
        "because |"
    )
    print("|---|---|---|---:|---|---:|---|---|---:|---|")
    for path in args.files:
        print("\n".join(rows(path)))


if __name__ == "__main__":
    main()
