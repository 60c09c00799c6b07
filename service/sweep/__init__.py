"""The nightly sweep: a TOML grid, planned into batched processes, run, merged over repeats, stored and diffed."""
