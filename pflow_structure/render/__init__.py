"""Renderers: each returns a string and never prints.

The names below load on first use, so that reading one renderer (``read-fields`` needs only
``fields_text``) does not load the others.
"""

from __future__ import annotations

from pflow_structure.lazy import lazy_names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pflow_structure.render.fields_text import render_fields_text
    from pflow_structure.render.structure_text import describe_entry, render_structure_text

__all__ = ["describe_entry", "render_fields_text", "render_structure_text"]

_HOMES = {
    "describe_entry": "pflow_structure.render.structure_text",
    "render_fields_text": "pflow_structure.render.fields_text",
    "render_structure_text": "pflow_structure.render.structure_text",
}


__getattr__ = lazy_names(__name__, _HOMES, globals())
