"""Running a session: lanes, GPU pools and CPU placement, sweeps and A/B runs."""
