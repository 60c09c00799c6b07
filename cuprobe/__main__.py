"""`python -m cuprobe`: the command line, as the `cuprobe` console script."""

from cuprobe.service.cli.main import main

main()
