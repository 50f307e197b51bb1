"""Print the host ranges torch.profiler records inside compiled calls (default and reduce-overhead).

A probe for issue 13 item 3 (where the host time goes): which range names a CUDA-graph replay,
the guards and the AOT wrappers show on this torch. Usage: python3 benchmarks/probe_ranges.py [cuda|cpu]
"""

import sys

import torch
from torch.profiler import ProfilerActivity, profile


def model(device):
    return torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.ReLU(),
                               torch.nn.Flatten(), torch.nn.Linear(16 * 32 * 32, 10)).to(device).eval()


def tree(events, limit=80):
    shown = 0
    for event in events:
        if event.cpu_parent is not None or shown >= limit:
            continue
        stack = [(event, 0)]
        while stack and shown < limit:
            node, depth = stack.pop()
            if str(node.device_type).endswith("CPU"):
                print(
                    f"{'  ' * depth}{node.name[:90]}  self={node.self_cpu_time_total:.1f}us "
                    f"total={node.time_range.elapsed_us():.1f}us"
                )
                shown += 1
            stack.extend((child, depth + 1) for child in reversed(node.cpu_children))


def main():
    device = sys.argv[1] if len(sys.argv) > 1 else ("cuda" if torch.cuda.is_available() else "cpu")
    print("torch", torch.__version__, "device", device)
    x = torch.randn(64, 3, 32, 32, device=device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    for mode in ("default", "reduce-overhead"):
        torch._dynamo.reset()
        net = model(device)
        fn = torch.compile(net, mode=mode)
        with torch.no_grad():
            for _ in range(5):
                fn(x)
            if device == "cuda":
                torch.cuda.synchronize()
            with profile(activities=activities) as prof:
                for _ in range(3):
                    if device == "cuda":
                        torch.compiler.cudagraph_mark_step_begin()
                    fn(x)
                if device == "cuda":
                    torch.cuda.synchronize()
        print(f"\n===== mode {mode}: key averages by self CPU")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40, max_name_column_width=70))
        print(f"===== mode {mode}: the first call's tree (CPU ranges)")
        tree(list(prof.events()), limit=60)


if __name__ == "__main__":
    main()
