"""``python -m streams`` is the ``spotsched`` command."""

from streams.cli import main

main()
