"""Large outputs (issue 30): one parse per run, an index beside each large entry, reads that parse
only what they return, and the same answers as a whole parse whatever the index holds."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pflow_structure.cache import index as index_module
from pflow_structure.cache.index import INDEX_SUFFIX, UNREAD
from pflow_structure.cache.store import ExecutionCache
from pflow_structure.encoding import encode_value, jsonio
from pflow_structure.paths import WILDCARD, format_path, parse_path
from pflow_structure.service import read_fields_detailed, store_outputs
from pflow_structure.service.answers import readout_text
from pflow_structure.structure import infer_structure
from tests.conftest import corpus_files, examples

ISSUES = Path(__file__).resolve().parent.parent / "examples" / "data" / "github_issues.json"


@pytest.fixture
def deep_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """Index down to small values, so that small test data exercises every kind of node."""
    monkeypatch.setattr(index_module, "SPLIT_BYTES", 40)
    monkeypatch.setattr(index_module, "MANY_CHILDREN", 3)


def _issues(count: int) -> list[dict[str, Any]]:
    issues = json.loads(ISSUES.read_text(encoding="utf-8"))
    return [dict(issues[i % len(issues)], number=i + 1) for i in range(count)]


def _store(cache: ExecutionCache, outputs: dict[str, Any]) -> str:
    stored = cache.put("read-json", {}, encode_value(outputs).value)
    assert stored.cached, stored.warnings
    return stored.execution_id


def _paths(outputs: dict[str, Any]) -> list[str]:
    """Every listed path with [0] as item 0, as [*], and as the last item; and each top-level key."""
    paths = list(outputs)
    for path in infer_structure(outputs, max_paths=10_000).structure:
        segments = parse_path(path)
        paths.append(path)
        paths.append(format_path([-1 if isinstance(s, int) else s for s in segments]))
        if sum(isinstance(s, int) for s in segments) == 1:
            paths.append(format_path([WILDCARD if isinstance(s, int) else s for s in segments]))
    return paths


def _read(cache: ExecutionCache, execution_id: str, paths: list[str], **kwargs: Any) -> Any:
    readout = read_fields_detailed(execution_id, paths, cache=cache, **kwargs)
    return readout.values, readout.errors, readout.totals, readout.missing


def _read_without_index(cache: ExecutionCache, execution_id: str, paths: list[str], **kwargs: Any) -> Any:
    index_path = cache.directory / (execution_id + INDEX_SUFFIX)
    saved = index_path.read_bytes()
    index_path.unlink()
    try:
        return _read(cache, execution_id, paths, **kwargs)
    finally:
        index_path.write_bytes(saved)


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.stem)
def test_reads_through_the_index_equal_a_whole_parse_on_the_corpus(path: Path, deep_index: None) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    outputs = {"result": json.loads(path.read_text(encoding="utf-8"))}
    execution_id = _store(cache, outputs)
    paths = _paths(outputs)
    assert (cache.directory / (execution_id + INDEX_SUFFIX)).exists()
    assert _read(cache, execution_id, paths) == _read_without_index(cache, execution_id, paths)


def test_reads_through_the_index_equal_a_whole_parse_on_generated_data(deep_index: None) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    outputs = {
        "result": _issues(30),
        "by name": {f"k{i}": {"n": i, "tags": ["a", "b"] * i} for i in range(10)},
        "json text": json.dumps({"inner": [1, 2, 3]}),
        "empty": [],
        "odd keys": {'a"b': 1, "é": [True, None], "": {"x": 1.5}},
    }
    execution_id = _store(cache, outputs)
    paths = [*_paths(outputs), "json text.inner[1]", '["odd keys"]["a\\"b"]', "result[-30].number", "result[30]"]
    assert _read(cache, execution_id, paths) == _read_without_index(cache, execution_id, paths)
    for offset, limit in ((0, 5), (28, 5), (40, 3)):
        page = ["result[*].title", "result[*].number"]
        assert _read(cache, execution_id, page, offset=offset, limit=limit) == _read_without_index(
            cache, execution_id, page, offset=offset, limit=limit
        )


def test_a_page_of_a_field_of_every_item_parses_only_the_page(
    deep_index: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "PAGE_ONLY_BYTES", 0)  # as if the list were large
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    execution_id = _store(cache, {"result": _issues(50)})
    items = cache.get_fields(execution_id, ["result[*].number"], page=(10, 5)).outputs["result"]
    assert [index for index, item in enumerate(items) if item is not UNREAD] == [10, 11, 12, 13, 14]


def test_a_page_of_a_path_some_items_lack_counts_them_on_the_page(
    deep_index: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the page's items of a large list are read, so the items that lack the path are counted among them."""
    monkeypatch.setattr(index_module, "PAGE_ONLY_BYTES", 0)  # as if the list were large
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    issues = _issues(30)
    for number in (28, 29):
        issues[number]["milestone"] = {"title": f"v{number}"} if number == 29 else None
    execution_id = _store(cache, {"result": issues})
    path = "result[*].milestone.title"
    readout = read_fields_detailed(execution_id, [path], cache=cache, offset=27, limit=5)
    assert (readout.values, readout.totals, readout.missing, readout.page_counts) == (
        {path: [None, None, "v29"]},
        {path: 30},
        {path: 2},
        {path: 3},
    )
    text, _ = readout_text(readout, offset=27)
    assert text == f'{path}: [null, null, "v29"]  # items 27-29 of 30; 2 of these 3 items lack this path (null)'


def test_a_page_counts_the_lacking_items_of_the_whole_list_from_the_structure_of_the_run(
    deep_index: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "PAGE_ONLY_BYTES", 0)  # as if the list were large
    issues = _issues(30)
    for number in range(0, 30, 3):
        issues[number].pop("locked")
    execution_id = store_outputs("read-json", {}, issues)["execution_id"]
    paths = ["result[*].locked", "result[*].user.login", "result[*].milestone.title"]
    readout = read_fields_detailed(execution_id, paths, offset=2, limit=4)
    assert readout.values["result[*].locked"] == [issues[2]["locked"], None, False, False]
    # locked: 10 of 30 (the structure says present 20 of 30); login: none; a milestone may be null: the page
    assert (readout.missing, readout.page_counts) == (
        {"result[*].locked": 10, "result[*].milestone.title": 4},
        {"result[*].milestone.title": 4},
    )


def test_a_page_of_a_path_of_a_small_list_counts_the_lacking_items_over_the_whole_list(deep_index: None) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    issues = _issues(30)
    issues[29]["milestone"] = {"title": "v29"}
    execution_id = _store(cache, {"result": issues})
    readout = read_fields_detailed(execution_id, ["result[*].milestone.title"], cache=cache, offset=27, limit=5)
    assert (readout.missing, readout.page_counts) == ({"result[*].milestone.title": 29}, {})


def test_a_read_parses_only_what_its_path_reaches(deep_index: None) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    execution_id = _store(cache, {"result": _issues(50), "total": 50})
    entry = cache.get_fields(execution_id, ["result[49].title"])
    assert entry.complete is False
    items = entry.outputs["result"]
    assert len(items) == 50
    assert items[49]["title"] == _issues(50)[49]["title"]
    assert sum(item is UNREAD for item in items) == 49
    assert entry.outputs["total"] is UNREAD


def test_a_small_entry_has_no_index_and_reads_whole() -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    execution_id = _store(cache, {"result": [1, 2, 3]})
    assert sorted(p.name for p in cache.directory.glob(execution_id + "*")) == [execution_id + ".json"]
    entry = cache.get_fields(execution_id, ["result[0]"])
    assert entry.complete is True
    assert entry.outputs == {"result": [1, 2, 3]}


def test_the_entry_stays_one_json_document_with_every_field(deep_index: None) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    outputs = {"result": _issues(20)}
    execution_id = _store(cache, outputs)
    document = json.loads((cache.directory / (execution_id + ".json")).read_text(encoding="utf-8"))
    assert document["outputs"] == outputs
    assert sorted(document) == [
        "binary_paths",
        "execution_id",
        "format_version",
        "node_type",
        "notes",
        "outputs",
        "params",
        "timestamp",
        "ttl_hours",
    ]


def test_the_index_is_private_and_goes_with_its_entry(deep_index: None) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    first = _store(cache, {"result": _issues(20)})
    second = _store(cache, {"result": _issues(20)})
    index_path = cache.directory / (first + INDEX_SUFFIX)
    assert stat.S_IMODE(index_path.stat().st_mode) == 0o600
    assert cache.delete(first) is True
    assert not index_path.exists()
    assert cache.clear() == 1
    assert list(cache.directory.glob("*" + INDEX_SUFFIX)) == []
    assert not (cache.directory / (second + ".json")).exists()


def _broken_indexes(good: dict[str, Any], size: int) -> dict[str, bytes]:
    """Index files that must be ignored: the read then parses the whole entry."""
    shifted = json.loads(json.dumps(good))
    shifted["outputs"]["k"]["result"]["o"] = [o + 1 for o in shifted["outputs"]["k"]["result"]["o"]]
    outside = json.loads(json.dumps(good))
    outside["outputs"]["k"]["result"]["o"][-1] = size * 10
    wrong_types = json.loads(json.dumps(good))
    wrong_types["outputs"]["k"]["result"] = {"s": "0", "e": [], "o": "x", "c": 3}
    return {
        "not JSON": b"\x00\xff garbage",
        "a JSON list": b"[1, 2, 3]",
        "another version": json.dumps(dict(good, v=99)).encode(),
        "another id": json.dumps(dict(good, id="exec-1-00000000")).encode(),
        "another size (stale)": json.dumps(dict(good, size=size + 1)).encode(),
        "ranges shifted by one byte": json.dumps(shifted).encode(),
        "a range past the end": json.dumps(outside).encode(),
        "nodes of the wrong types": json.dumps(wrong_types).encode(),
        "nested too deeply": b"[" * 100_000 + b"]" * 100_000,
        "empty": b"",
    }


def test_a_broken_stale_or_hostile_index_falls_back_to_the_whole_entry(deep_index: None) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    outputs = {"result": _issues(20)}
    execution_id = _store(cache, outputs)
    index_path = cache.directory / (execution_id + INDEX_SUFFIX)
    good = json.loads(index_path.read_bytes())
    size = (cache.directory / (execution_id + ".json")).stat().st_size
    paths = ["result[7].title", "result[-1].user.login", "result[*].number"]
    expected = _read(cache, execution_id, paths)
    assert expected[0]["result[7].title"] == outputs["result"][7]["title"]
    for name, data in _broken_indexes(good, size).items():
        index_path.unlink()
        index_path.write_bytes(data)
        assert _read(cache, execution_id, paths) == expected, name


def test_an_index_that_is_a_symlink_or_a_fifo_is_not_followed(deep_index: None, tmp_path: Path) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    execution_id = _store(cache, {"result": _issues(20)})
    index_path = cache.directory / (execution_id + INDEX_SUFFIX)
    paths = ["result[3].title"]
    expected = _read(cache, execution_id, paths)
    elsewhere = tmp_path / "elsewhere.idx"
    elsewhere.write_bytes(index_path.read_bytes())
    index_path.unlink()
    index_path.symlink_to(elsewhere)
    assert cache.get_fields(execution_id, paths).complete is True
    assert _read(cache, execution_id, paths) == expected
    index_path.unlink()
    os.mkfifo(index_path)
    assert cache.get_fields(execution_id, paths).complete is True
    assert _read(cache, execution_id, paths) == expected


def test_an_entry_rewritten_after_its_index_reads_the_new_content(deep_index: None) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    execution_id = _store(cache, {"result": _issues(20)})
    entry_path = cache.directory / (execution_id + ".json")
    document = json.loads(entry_path.read_bytes())
    document["outputs"]["result"][3]["title"] = "changed by another tool"
    entry_path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    values, errors, _, _ = _read(cache, execution_id, ["result[3].title"])
    assert values == {"result[3].title": "changed by another tool"}
    assert errors == {}


def test_a_miss_on_a_partly_read_entry_says_what_a_whole_read_says(deep_index: None) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    execution_id = _store(cache, {"result": _issues(20)})
    paths = ["result[3].titel", "result[99].title", "result.title", "results[0]"]
    assert _read(cache, execution_id, paths) == _read_without_index(cache, execution_id, paths)
    _, errors, _, _ = _read(cache, execution_id, ["result[3].titel"])
    assert errors["result[3].titel"].startswith("result[3].titel: no key 'titel' here.")


def test_encode_value_keeps_a_plain_json_value_without_copying_it() -> None:
    value = {"result": [{"a": 1, "b": [1.5, None, True, "x"]}]}
    assert encode_value(value).value is value
    for changed in ({"x": float("nan")}, {"x": (1, 2)}, {1: "a"}, {"x": 10**5000}, {"x": b"hi"}):
        assert encode_value(changed).value is not changed


TRICKY_TEXTS = [
    b'{"a": [1, 2.5, -0.0, 1E5, true, null, "\\u00e9\\n"]}',
    b"123456789012345678901234567890",  # past 64 bits: orjson would give a float
    b"-9223372036854775809",
    b"18446744073709551615",
    b"[NaN, Infinity, -Infinity]",
    b"1e400",
    b'"\\ud800"',  # a lone surrogate
    b'{"a": 1, "a": 2}',
]


@pytest.mark.parametrize("text", TRICKY_TEXTS)
def test_jsonio_loads_as_the_standard_library_with_and_without_orjson(
    text: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = repr(json.loads(text))
    assert repr(jsonio.loads(text)) == expected
    monkeypatch.setattr(jsonio, "_orjson", None)
    assert repr(jsonio.loads(text)) == expected


@pytest.mark.parametrize("orjson_present", [True, False])
def test_jsonio_dumps_as_the_standard_library_with_and_without_orjson(
    orjson_present: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not orjson_present:
        monkeypatch.setattr(jsonio, "_orjson", None)
    value = {"é": [1, 2.5, "a\nb", None, True, {"k": 10**30}], "s": "\udcff"}
    assert jsonio.dumps(value) == json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()
    assert jsonio.dumps({"é": 1}) == '{"é":1}'.encode()
    assert jsonio.dumps({1: 2}) == b'{"1":2}'
    with pytest.raises(ValueError, match="Out of range float values"):
        jsonio.dumps({"a": [float("nan")]})
    with pytest.raises(TypeError):
        jsonio.dumps({"a": object()})


def test_the_jsonio_fallback_is_what_runs_without_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonio, "_orjson", None)
    assert jsonio.parse_fast(b"[1]") == (False, None)
    assert jsonio.ORJSON is True  # installed here (a dependency); the flag says what was found at import


def test_read_json_gives_the_standard_librarys_values(tmp_path: Path) -> None:
    from pflow_structure.nodes.read_json import load_json_file

    for number, text in enumerate(TRICKY_TEXTS):
        path = tmp_path / f"{number}.json"
        path.write_bytes(text)
        assert repr(load_json_file(path)) == repr(json.loads(text)), text


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=4), children, max_size=6),
    max_leaves=40,
)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_JSON)
def test_any_value_reads_the_same_through_its_index(value: Any, deep_index: None) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    outputs = {"result": value, "pad": ["x" * 50] * 3}
    execution_id = _store(cache, outputs)
    paths = _paths(outputs)
    assert _read(cache, execution_id, paths) == _read_without_index(cache, execution_id, paths)
    cache.delete(execution_id)


def test_prune_removes_an_index_whose_entry_something_else_removed(deep_index: None) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    execution_id = _store(cache, {"result": _issues(20)})
    (cache.directory / (execution_id + ".json")).unlink()
    cache.prune()
    assert not (cache.directory / (execution_id + INDEX_SUFFIX)).exists()


def test_a_page_of_a_last_wildcard_reads_only_its_items(deep_index: None) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    issues = _issues(40)
    execution_id = _store(cache, {"result": issues})
    entry = cache.get_fields(execution_id, ["result[*]"], page=(10, 5))
    items = entry.outputs["result"]
    assert [i for i, item in enumerate(items) if item is not UNREAD] == [10, 11, 12, 13, 14]
    for offset, limit in ((10, 5), (38, 5), (0, 0), (50, 2)):
        paths = ["result[*]", "result[*].number", "result[3].title"]
        assert _read(cache, execution_id, paths, offset=offset, limit=limit) == _read_without_index(
            cache, execution_id, paths, offset=offset, limit=limit
        )
    values, _, totals, _ = _read(cache, execution_id, ["result[*]"], offset=38, limit=5)
    assert values == {"result[*]": issues[38:]}
    assert totals == {"result[*]": 40}


def test_a_put_under_a_taken_id_leaves_the_entry_and_its_index_alone(deep_index: None) -> None:
    cache = ExecutionCache(Path(os.environ["PFLOW_STRUCTURE_CACHE_DIR"]))
    execution_id = _store(cache, {"result": _issues(20)})
    index_before = (cache.directory / (execution_id + INDEX_SUFFIX)).read_bytes()
    stored = cache.put("read-json", {}, {"result": _issues(30)}, execution_id=execution_id)
    assert stored.cached is False
    assert (cache.directory / (execution_id + INDEX_SUFFIX)).read_bytes() == index_before
    assert cache.get_fields(execution_id, ["result[19].number"]).complete is False
