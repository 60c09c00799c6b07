"""cuprobe's parser as it was before the parallel parse (commit 53eab64), bench/parse.py's baseline; it carries the
rules that landed beside the split since (record severity, leak and unused-memory signatures) so both parse alike."""
