"""The pre-merge gate: a suite of probes, a baseline of known findings, a verdict and its reports."""
