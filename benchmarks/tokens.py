"""Token counting for the benchmarks: the package's own o200k counter (see pflow_structure.render.tokens)."""

from pflow_structure.render.tokens import ENCODING, ESTIMATED, count_tokens, method, vocabulary_file

__all__ = ["ENCODING", "ESTIMATED", "count_tokens", "method", "vocabulary_file"]
