"""Weights of the learned field score (see :mod:`pflow_structure.filtering.features`).

Written by ``python benchmarks/filter_learn.py --write``; do not edit by hand.
"""

from __future__ import annotations

from pflow_structure.filtering.features import Model

MODEL: Model | None = None
