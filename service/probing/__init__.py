"""Probe requests: admission, the runner (sanitizer or bare) and the environment fingerprint."""
