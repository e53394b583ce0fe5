"""`python -m omni_cli.cli`: the same as the `omni` script."""

from .entry import main

main()
