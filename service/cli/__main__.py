"""`python -m cuprobe.service.cli`."""

from cuprobe.service.cli.main import main

main()
