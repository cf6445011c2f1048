"""``python -m pflow_structure``: the same as the ``pflow-structure`` command."""

from pflow_structure.cli import main

main(prog_name="pflow-structure")
