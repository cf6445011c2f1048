"""A large JSON list cached and described one item at a time (issue 37.2): the same entry, byte for byte,
and the same structure answer as the whole value's way, on real API lists and on the edge cases."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.encoding.jsonio import list_items, loads
from pflow_structure.mcp.proxy import shaping
from pflow_structure.mcp.proxy.stdio import LARGE_LINE, as_text, decode, encode
from pflow_structure.service import capture_outputs, streaming
from pflow_structure.service.streaming import capture_list_text
from pflow_structure.settings import Settings
from pflow_structure.structure import infer_result_items, infer_structure
from tests.conftest import corpus_files

ID = re.compile(r"exec-\d+-[0-9a-f]+")
# The corpus holds five top-level lists; each other file goes in as the one item of a list.
LISTS = [path for path in corpus_files() if path.read_text(encoding="utf-8").lstrip().startswith("[")]
EDGES = {
    "empty": "[]",
    "empty, spaced": " \n[ \n ]\n",
    "mixed types": '[1, "a", null, true, 2.5, {"k": 1}, [1, 2], {"k": "x", "j": []}]',
    "nested lists": "[[[1, [2]], []], [[3]], [], [[[[4]]]]]",
    "unicode": '[{"name": "Zoë \\u00e9 \\ud83d\\ude00 \u4e2d\u6587", "tag": "\\u2028"}, {"name": "plain"}]',
    "large ints": '[{"n": 123456789012345678901234567890}, {"n": -9223372036854775809}, {"n": 1}]',
    "floats as written": '[{"price": 19.90, "tiny": 1e-7, "big": 1E+300}, {"price": 0.5}]',
    "some fields in some items": '[{"a": 1}, {"a": 2, "b": {"c": 1}}, {"a": 3}, {"b": {"c": 2}}, {"a": 5, "b": {}}]',
    "duplicate keys": '[{"a": 1, "a": 2}, {"a": 3}]',
}


@pytest.fixture(autouse=True)
def stream_small_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stream texts of every size here, so that small files take the item-by-item way."""
    monkeypatch.setattr(streaming, "STREAM_CHARS", 0)


def _both(text: str, params: dict[str, Any] | None = None) -> tuple[Any, Any, Settings]:
    settings = Settings.from_env()
    params = params or {}
    streamed = capture_list_text("mcp:tool", params, text, settings=settings)
    assert streamed is not None
    whole = capture_outputs("mcp:tool", params, {"result": loads(text.strip())}, settings=settings)
    return streamed, whole, settings


def _outputs_bytes(settings: Settings, execution_id: str) -> bytes:
    path = Path(settings.cache().location) / f"{execution_id}.json"
    raw = path.read_bytes()
    return raw[raw.index(b'"outputs":') :]


def _same(text: str, params: dict[str, Any] | None = None) -> None:
    streamed, whole, settings = _both(text, params)
    new, old = streamed.result["execution_id"], whole.result["execution_id"]
    assert ID.sub("ID", json.dumps(streamed.result)) == ID.sub("ID", json.dumps(whole.result))
    assert streamed.structure == whole.structure
    assert _outputs_bytes(settings, new) == _outputs_bytes(settings, old)
    assert settings.cache().get(new).outputs == settings.cache().get(old).outputs


@pytest.mark.parametrize("path", LISTS, ids=lambda path: path.stem)
def test_a_corpus_list_streamed_gives_the_entry_and_the_answer_of_the_whole_list(path: Path) -> None:
    _same(path.read_text(encoding="utf-8"))


def test_every_corpus_file_as_the_one_item_of_a_list_gives_the_same_entry_and_answer() -> None:
    for path in corpus_files():
        _same("[" + path.read_text(encoding="utf-8") + "]")


@pytest.mark.parametrize("name", list(EDGES))
def test_an_edge_case_list_streamed_gives_the_entry_and_the_answer_of_the_whole_list(name: str) -> None:
    _same(EDGES[name])


def test_items_only_some_hold_are_named_as_the_whole_list_names_them() -> None:
    streamed, _, _ = _both(EDGES["some fields in some items"])
    assert streamed.structure["result[0].b"]["present_at"] == [1, 3, 4]
    assert streamed.structure["result[0].b.c"]["present_at"] == [1, 3]


def test_a_list_as_long_as_the_limit_asked_for_says_so_in_its_page_line() -> None:
    text = json.dumps([{"n": n} for n in range(5)])
    streamed, whole, _ = _both(text, {"limit": 5})
    assert streamed.result["page"] == whole.result["page"] == "5 of more? (limit=5)"


@pytest.mark.parametrize(
    "text",
    ['{"a": [1, 2]}', "[1, 2] and more", "[1, 2", "[1,]", '[{"n": NaN}]', "[" + "9" * 5000 + "]", "plain words"],
    ids=["an object", "extra text", "cut off", "a trailing comma", "NaN", "an integer past the JSON limit", "text"],
)
def test_text_that_is_not_one_plain_json_list_is_declined_and_nothing_is_cached(text: str) -> None:
    settings = Settings.from_env()
    assert capture_list_text("mcp:tool", {}, text, settings=settings) is None
    assert settings.cache().scan() == []


def test_a_want_is_declined_its_answer_reads_values() -> None:
    assert capture_list_text("mcp:tool", {}, "[1, 2]", settings=Settings.from_env(), want="numbers") is None


def test_list_items_give_each_item_as_the_whole_parse_does() -> None:
    for text in EDGES.values():
        assert list(list_items(text.strip())) == loads(text.strip())


def test_structure_inferred_item_by_item_equals_the_whole_lists() -> None:
    items = json.loads(LISTS[0].read_text(encoding="utf-8"))
    assert infer_result_items(iter(items)) == infer_structure({"result": items})


def test_the_proxy_answers_a_large_list_as_it_answers_it_parsed_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps(json.loads(LISTS[0].read_text(encoding="utf-8")), indent=2)
    result = {"content": [{"type": "text", "text": text}], "isError": False}
    settings = Settings.from_env()

    def answer() -> Any:
        return shaping.shape_and_store("list", {}, result, settings=settings, budget=1000, read_tool="read_fields")

    parsed: list[int] = []
    real_payload = shaping.payload

    def payload(result: dict[str, Any]) -> Any:
        parsed.append(1)
        return real_payload(result)

    monkeypatch.setattr(shaping, "payload", payload)
    streamed = answer()
    assert parsed == []  # the text was never parsed whole
    monkeypatch.setattr(streaming, "STREAM_CHARS", len(text) + 1)  # now parsed whole
    whole = answer()
    assert parsed == [1]
    assert (streamed.kind, streamed.tokens_in) == (whole.kind, whole.tokens_in) == ("cached", whole.tokens_in)
    assert ID.sub("ID", json.dumps(streamed.result)) == ID.sub("ID", json.dumps(whole.result))
    assert len(settings.cache().scan()) == 2


def test_a_large_line_decodes_as_json_loads_reads_it_and_keeps_each_float_as_written() -> None:
    text = json.dumps([{"n": n, "s": "é\n\u2028"} for n in range(LARGE_LINE // 20)])
    plain = {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": text}]}}
    line = json.dumps(plain, ensure_ascii=False).encode()
    assert len(line) >= LARGE_LINE
    for raw in (line, b"\xef\xbb\xbf" + line, json.dumps(plain).encode("utf-16")):  # as json.loads reads bytes
        decoded = as_text(bytearray(raw))
        assert type(decoded) is str
        assert decode(decoded) == json.loads(raw) == plain
    floats = line[:-1] + b',"price":19.90,"tiny":1e-7}'
    assert encode(decode(as_text(bytearray(floats))) or {}).endswith(b'"price":19.90,"tiny":1e-7}\n')
    assert decode(as_text(bytearray(b"\xff" * LARGE_LINE))) is None  # not UTF-8: not a message, as before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak from /proc/self/status")
def test_caching_a_12_mb_list_holds_far_less_than_its_parsed_tree() -> None:
    def records(count: int) -> str:
        return json.dumps(
            [{"id": n, "title": f"Record {n}: a title", "labels": [{"name": "bug"}]} for n in range(count)]
        )

    settings = Settings.from_env()
    assert capture_list_text("mcp:small", {}, records(50), settings=settings) is not None  # what it loads, loaded first
    text = records(150_000)
    before = _peak_after_reset()
    assert capture_list_text("mcp:big", {}, text, settings=settings) is not None
    grown = _peak() - before
    # The parsed list alone is about 4.5x its 12 MB of text; one item at a time stays within a third of the text.
    assert grown < len(text) / 3, f"{grown / 1e6:.0f} MB for {len(text) / 1e6:.0f} MB of text"


def _peak() -> int:
    status = Path("/proc/self/status").read_text(encoding="ascii")
    return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024  # type: ignore[union-attr]


def _peak_after_reset() -> int:
    Path("/proc/self/clear_refs").write_text("5", encoding="ascii")  # the peak starts again from now
    status = Path("/proc/self/status").read_text(encoding="ascii")
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024  # type: ignore[union-attr]


def test_compact_longer_than_answers_as_the_whole_compact_text_does_around_its_length() -> None:
    from pflow_structure.render.output_text import compact, compact_longer_than

    values: list[Any] = [
        [],
        {"a": "é\u2028", "b": [1, 2.5, None, True]},
        {"bad": "\ud800 x"},  # a lone surrogate: the compact text escapes it, longer than without
        {"bytes": b"\x00\xff"},
        json.loads(LISTS[0].read_text(encoding="utf-8")),
    ]
    for value in values:
        length = len(compact(value))
        for chars in (0, length // 2, length - 1, length, length + 1):
            assert compact_longer_than(value, chars) == (length > chars), (value, chars)
