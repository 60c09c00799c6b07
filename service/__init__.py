"""The core of cuprobe: models, settings, sanitizer runner and parser, store, queue, API, CLI, gate, sweep, reports."""
