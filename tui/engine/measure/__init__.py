"""Numbers and what they support: timings, clocks, the bootstrap, summaries and the verdict."""
