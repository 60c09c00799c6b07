"""cuprobe's parser as it was before the parallel parse (commit 53eab64), kept verbatim as bench/parse.py's baseline."""
