"""``python -m spraylab.cli``: the ``spraylab`` command."""

from spraylab.cli import main

main()
