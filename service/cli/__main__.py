"""`python -m service.cli`."""

from service.cli.main import main

main()
