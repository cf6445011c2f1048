"""``python -m pflow_structure``: the same as the ``pflow-structure`` command."""

from pflow_structure.cli.entry import main

main()
