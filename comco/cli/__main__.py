"""`python -m comco.cli`: the same command as `comco`."""

from comco.cli.app import main

main()
