"""GPU telemetry through NVML (nvidia-ml-py). Imports neither torch nor textual."""
