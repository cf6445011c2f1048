"""``python -m pflow_structure``: the same as the ``pflow-structure`` command."""

from pflow_structure.cli_fast import main

main()
