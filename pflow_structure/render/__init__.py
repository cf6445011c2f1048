"""Renderers: each returns a string and never prints."""

from __future__ import annotations

from pflow_structure.render.fields_text import render_fields_text
from pflow_structure.render.structure_text import describe_entry, render_structure_text

__all__ = ["describe_entry", "render_fields_text", "render_structure_text"]
