"""The fitted weights of the learned field score (see :mod:`pflow_structure.filtering.features`).

The weights are data: ``learned.json`` beside this module (package data), written by
``python benchmarks/filter_learn.py --write`` and never edited by hand. It is read once, on the
first call that needs it, so importing the filter costs nothing for a structure that is never
filtered. Its keys: ``weights`` (feature name → weight), ``threshold`` (the score from which a
field is shown) and ``fitted_on`` (the API families the weights were fitted on; the benchmarks
judge every other labelled family as never seen).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from pflow_structure.filtering.features import Model

WEIGHTS_FILE = "learned.json"


@cache
def _shipped() -> dict[str, Any]:
    text = resources.files("pflow_structure.filtering").joinpath(WEIGHTS_FILE).read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@cache
def shipped_model() -> Model:
    """The weights and the threshold as shipped, read from ``learned.json`` on first use."""
    data = _shipped()
    return Model(weights=MappingProxyType(data["weights"]), threshold=float(data["threshold"]))


@cache
def fitted_on() -> tuple[str, ...]:
    """The API families the shipped weights were fitted on, sorted."""
    return tuple(_shipped()["fitted_on"])
