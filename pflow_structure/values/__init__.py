"""Values passed on without entering the context: ``${exec-ID:PATH}`` references in tool arguments
(:mod:`~pflow_structure.values.references`) and copy-on-write edits of cached values
(:mod:`~pflow_structure.values.edits`). Core: no adapter imports, no printing, no environment."""
