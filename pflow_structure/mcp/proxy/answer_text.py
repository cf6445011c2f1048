"""The proxy's own answers as text: a cached result's structure, and what an edit changed.

A cached answer used to be the compact JSON of the structure dict, repeated as structuredContent.
Every path was written in full and every statistic named (``"result.items[0].title":{"type":
"str","avg_length":41}``), so about 30 paths cost 500 to 900 tokens. The answer is now the
indented tree the CLI prints (:func:`~pflow_structure.render.structure_text.tree_lines`, where a
line extends the path of the line it is indented under, ``str ~41``), between one line naming
the execution id and the count, and one line on reading and passing values on: about half the
tokens, with the same content (tests read the text back into the very dict it was written from).

The answer has no structuredContent: the proxy removes every tool's ``outputSchema`` from the
tool list, so no client expects one, and a client that shows structuredContent to the model
would show the structure twice, once as JSON.

Plain functions on plain dicts: no SDK types here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pflow_structure.render.structure_text import NO_PATHS, TREE_HEADER, WANTED_IN_HINT, hint_path, tree_lines


def cached_text(
    described: Mapping[str, Any], tokens: int, example_path: str, read_tool: str, note: str | None = None
) -> str:
    """The answer for a result too large to show: its id, structure, field count and the read hint.

    ``described`` is the store's dict (``registry_run``'s); ``tokens`` what the result would have
    cost; ``note`` plain words the server wrote beside its data ("3 more pages, use page=2").
    """
    execution_id = described["execution_id"]
    structure: Mapping[str, Mapping[str, Any]] = described["structure"]
    lines = [f"Too large to show ({tokens:,} tokens), cached as {execution_id}. {TREE_HEADER}"]
    if described.get("page"):  # the API's paging, at the top: an answer from page 1 of 5 is not the answer
        lines.insert(0, f"Page: {described['page']}")
    lines.extend(tree_lines(structure, described.get("hidden")) if structure else [f"  {NO_PATHS}"])
    lines.append(_field_count(described))
    if described.get("omitted_paths"):
        lines.append(f"Omitted paths: {described['omitted_paths']} deeper paths not listed; read a parent path")
    lines.extend(f"Warning: {warning}" for warning in described.get("warnings", []))
    wanted = [path for path in described.get("wanted") or () if path in structure][:WANTED_IN_HINT]
    reads = list(dict.fromkeys(hint_path(path, structure[path]) for path in wanted))
    example = hint_path(example_path, structure[example_path]) if example_path in structure else example_path
    lines.append(hint(execution_id, example, read_tool, wanted=reads))
    if note is not None:  # last: it runs to the end, over as many lines as it has
        lines.append(f"The server's note: {note}")
    return "\n".join(lines)


def sized_text(answer: Mapping[str, Any], read_tool: str, render: Any = None, note: str | None = None) -> str:
    """The proxy's text for an answer the size of the question (:mod:`pflow_structure.service.want_answer`):
    the data in its compact rendering (``render``: value -> (text, format)) and the id line, or the
    want answer's values and map."""
    from pflow_structure.service.want_answer import page_line, want_text

    if "data" in answer:
        text = render(answer["data"])[0] if render is not None else json.dumps(answer["data"], ensure_ascii=False)
        lines = [*page_line(answer), text, answer["rest"].replace("read_fields", read_tool)]
    else:
        structure_call = "the same call without _want gives the structure"
        lines = [want_text(answer, "tool", structure_call, read_tool=read_tool)]
    if note is not None:
        lines.append(f"The server's note: {note}")
    return "\n".join(lines)


def _field_count(described: Mapping[str, Any]) -> str:
    """``Fields: 17 of 112 shown (...)`` when the filter hid some, else ``Fields: 6``."""
    shown = described["field_count"]
    if not described.get("filtered"):
        return f"Fields: {shown}"
    return f"Fields: {shown} of {described['original_field_count']} shown (the others are named and read back too)"


def hint(execution_id: str, example_path: str, read_tool: str = "read_fields", *, wanted: Sequence[str] = ()) -> str:
    """One line: how to read values (with a path that exists, or the fields matching the agent's
    ``want``, best first) and how to pass them on unread."""
    paths = ", ".join(json.dumps(path, ensure_ascii=False) for path in wanted or [example_path])
    lead = "Fields matching your want, best first" if wanted else "Read values"
    return (
        f"{lead}: {read_tool}(execution_id={json.dumps(execution_id)}, "
        f"field_paths=[{paths}]); [*] reads every item, limit/offset page. "
        'Pass values on unread: "${execution_id:path}" in any argument.'
    )


def edit_answer(result: dict[str, Any]) -> dict[str, Any]:
    """The proxy's ``edit_fields`` answer from the server's (a result dict): the same error, or the
    changes as text (:func:`edit_text`) without the dict beside it."""
    if result.get("isError"):
        return result
    return {"content": [{"type": "text", "text": edit_text(result["structuredContent"])}], "isError": False}


def edit_text(changes: Mapping[str, Any]) -> str:
    """``edit_fields``' answer (the dict :func:`~pflow_structure.service.values.edit_fields` returns
    with ``changes_only``) as text: the new id, then only the paths whose statistics changed.

    The original's id and the new field count are left out: the agent gave the one and sees
    the other in the changed and removed paths."""
    structure: Mapping[str, Mapping[str, Any]] = changes["structure"]
    head = f"Edited into {changes['execution_id']}; every path not listed here is as before."
    lines = [head + (" Changed paths:" if structure else " No path changed its type or statistics.")]
    lines.extend(tree_lines(structure))
    if changes.get("removed_paths"):
        lines.append("Removed paths: " + json.dumps(changes["removed_paths"], ensure_ascii=False))
    lines.extend(f"Warning: {warning}" for warning in changes.get("warnings", []))
    return "\n".join(lines)
