"""Probe programs that run inside compute-sanitizer, one module each, and their registry."""
