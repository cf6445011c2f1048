"""What the MCP proxy does to one tool result: pass, compact or cache (mcp/proxy/shaping.py).

Everything runs on a real execution cache under ``tmp_path`` and real token counts
(``count_tokens``); a ``len`` counter is used where the exact numbers matter.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pflow_structure.mcp.proxy.answer_text import edit_text, hint
from pflow_structure.mcp.proxy.shaping import (
    MalformedJSONError,
    Shaped,
    duplicates_text,
    parse_text,
    payload,
    shape_result,
    strip_whitespace,
    visible_tokens,
)
from pflow_structure.render.tokens import count_tokens
from pflow_structure.service import read_fields, store_outputs
from pflow_structure.settings import Settings
from tests.conftest import corpus_files, examples
from tests.structure_text import cached, edited

HUGE = 10**9

# -- helpers ---------------------------------------------------------------------------------


@pytest.fixture
def config(tmp_path: Path) -> Settings:
    return Settings(cache_dir=tmp_path / "cache", failure_log=tmp_path / "fail.jsonl")


@pytest.fixture
def store(config: Settings) -> Any:
    return lambda tool, args, value: store_outputs(f"mcp:{tool}", args, {"result": value}, settings=config)


def _text(*texts: str, **extra: Any) -> dict[str, Any]:
    """A CallToolResult as a dict: one text block per argument, plus any top-level fields."""
    return {"content": [{"type": "text", "text": text} for text in texts], **extra}


def _cached_entries(config: Settings) -> list[Path]:
    return sorted(config.cache_dir.glob("exec-*.json"))


def _shape(result: dict[str, Any], store: Any, *, budget: int = 1000, count: Any = count_tokens) -> Shaped:
    return shape_result("tool", {"q": 1}, result, budget=budget, count=count, store=store)


def _issues(n: int) -> list[dict[str, Any]]:
    return [
        {
            "number": i,
            "title": f"Issue number {i}: the widget breaks when the gadget is frobnicated",
            "labels": ["bug", "p2"],
            "user": {"login": f"user{i}", "id": 1000 + i},
            "closed": i % 3 == 0,
        }
        for i in range(n)
    ]


IMAGE = {"type": "image", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAf", "mimeType": "image/png"}


# -- parse_text ------------------------------------------------------------------------------


def test_parse_text_decodes_an_object_or_array_with_surrounding_whitespace() -> None:
    assert parse_text('  {"a": [1, 2]}\n') == (True, {"a": [1, 2]})
    assert parse_text("\n[true, null]  ") == (True, [True, None])


@pytest.mark.parametrize("text", ["hello", "42", "null", "true", '"quoted"', "", "   ", "- [ ] todo"])
def test_parse_text_leaves_text_that_does_not_start_like_an_object_or_array(text: str) -> None:
    is_json, value = parse_text(text)
    assert is_json is False
    assert value is text


@pytest.mark.parametrize("text", ['{"a": 1,', "[1, 2", '{"oops}', "[1,]", '  {"a": 1} trailing', "[true,]"])
def test_parse_text_raises_malformed_json_for_broken_json_looking_text(text: str) -> None:
    with pytest.raises(MalformedJSONError, match="starts like JSON"):
        parse_text(text)


def test_malformed_json_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_text('{"a": 1,')


# -- duplicates_text -------------------------------------------------------------------------


def test_structured_equal_to_the_parsed_text_duplicates_it() -> None:
    text = '{"a": 1, "b": [2]}'
    assert duplicates_text({"a": 1, "b": [2]}, [text], [json.loads(text)])


def test_one_key_wrapper_around_the_raw_text_duplicates_it() -> None:
    text = "line one\nline two"  # server-filesystem read_file: {"content": text}
    assert duplicates_text({"content": text}, [text], [text])


def test_one_key_wrapper_around_the_parsed_list_duplicates_it() -> None:
    entities = [{"name": "Ada", "entityType": "person", "observations": ["wrote notes"]}]
    text = json.dumps(entities, indent=2)  # server-memory create_entities: {"entities": [...]}
    assert duplicates_text({"entities": entities}, [text], [entities])


def test_structured_with_other_data_is_not_a_duplicate() -> None:
    text = '{"a": 1}'
    assert not duplicates_text({"a": 2}, [text], [{"a": 1}])
    assert not duplicates_text({"a": 1, "b": 2}, [text], [{"a": 1}])
    assert not duplicates_text({"content": text, "size": 8}, [text], [{"a": 1}])


def test_structured_with_an_int_where_the_text_has_a_bool_is_not_a_duplicate() -> None:
    text = '{"ok": true}'
    assert not duplicates_text({"ok": 1}, [text], [{"ok": True}])


def test_nothing_duplicates_several_text_blocks() -> None:
    texts = ['{"a": 1}', '{"a": 1}']
    assert not duplicates_text({"a": 1}, texts, [{"a": 1}, {"a": 1}])


# -- visible_tokens --------------------------------------------------------------------------


def test_visible_tokens_sums_every_text_block() -> None:
    assert visible_tokens(_text("abc", "de"), len) == 5
    assert visible_tokens(_text("abc", "de"), count_tokens) == count_tokens("abc") + count_tokens("de")


def test_visible_tokens_counts_non_text_blocks_as_their_compact_json() -> None:
    result = {"content": [{"type": "text", "text": "ab"}, IMAGE]}
    compact = json.dumps(IMAGE, separators=(",", ":"))
    assert visible_tokens(result, len) == 2 + len(compact)


def test_visible_tokens_of_an_empty_result_is_zero() -> None:
    assert visible_tokens({"content": []}, len) == 0
    assert visible_tokens({}, len) == 0


@pytest.mark.parametrize(
    ("text", "structured"),
    [
        pytest.param(json.dumps({"a": 1, "b": "x"}, indent=2), {"a": 1, "b": "x"}, id="equal-to-parsed"),
        pytest.param("file body\nsecond line\n", {"content": "file body\nsecond line\n"}, id="filesystem-wrapper"),
        pytest.param(
            json.dumps([{"name": "Ada", "entityType": "person", "observations": []}], indent=2),
            {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]},
            id="memory-entities-wrapper",
        ),
    ],
)
def test_structured_content_that_duplicates_the_text_is_counted_once(text: str, structured: Any) -> None:
    with_structured = _text(text, structuredContent=structured)
    assert visible_tokens(with_structured, count_tokens) == count_tokens(text)
    assert visible_tokens(with_structured, len) == len(text)


def test_structured_content_that_is_not_a_duplicate_is_counted() -> None:
    structured = {"path": "/tmp/x", "size": 3}
    result = _text("Wrote the file.", structuredContent=structured)
    assert visible_tokens(result, len) == len("Wrote the file.") + len('{"path":"/tmp/x","size":3}')


def test_visible_tokens_survives_malformed_json_text_and_counts_the_structured_content() -> None:
    result = _text('{"a": 1,', structuredContent={"a": 1})
    assert visible_tokens(result, len) == len('{"a": 1,') + len('{"a":1}')


# -- payload ---------------------------------------------------------------------------------


def test_payload_of_json_text_is_its_value() -> None:
    assert payload(_text('{"a": [1, 2]}')) == ({"a": [1, 2]}, True)


def test_payload_of_plain_text_is_its_lines_and_joins_back_exactly() -> None:
    text = "one\ntwo\r\nthree\x0bstill three\u2028and\n"
    lines, from_json = payload(_text(text))  # type: ignore[misc]
    assert from_json is False
    assert lines == ["one", "two\r", "three\x0bstill three\u2028and", ""]
    assert "\n".join(lines) == text


def test_payload_prefers_structured_content_that_says_more_than_plain_text() -> None:
    assert payload(_text("Wrote 3 bytes.", structuredContent={"size": 3})) == ({"size": 3}, True)


def test_payload_ignores_a_structured_wrapper_around_plain_text() -> None:
    text = "alpha\nbeta"
    assert payload(_text(text, structuredContent={"content": text})) == (["alpha", "beta"], False)


def test_payload_of_json_text_ignores_structured_content() -> None:
    assert payload(_text('{"a": 1}', structuredContent={"other": 2})) == ({"a": 1}, True)


def test_payload_of_several_blocks_is_one_value_per_block() -> None:
    assert payload(_text('{"a": 1}', "plain\ntext", "[2]")) == ([{"a": 1}, "plain\ntext", [2]], True)
    assert payload(_text("one", "two")) == (["one", "two"], False)


def test_payload_of_non_text_content_is_none() -> None:
    assert payload({"content": [{"type": "text", "text": "{}"}, IMAGE]}) is None


def test_payload_of_empty_content() -> None:
    assert payload({"content": []}) == ([], False)
    assert payload({"content": [], "structuredContent": {"k": [1]}}) == ({"k": [1]}, True)


def test_payload_raises_for_malformed_json_text() -> None:
    with pytest.raises(MalformedJSONError):
        payload(_text('{"a": 1,'))


# -- hint ------------------------------------------------------------------------------------


def test_hint_is_one_line_naming_the_id_a_path_and_how_to_pass_values_on() -> None:
    assert hint("exec-1763463202-0cd0c8fe", "result[0].title", "pflow_structure_read_fields") == (
        'Read values: pflow_structure_read_fields(execution_id="exec-1763463202-0cd0c8fe", '
        'field_paths=["result[0].title"]); [*] reads every item, limit/offset page. '
        'Pass values on unread: "${execution_id:path}" in any argument.'
    )


# -- shape_result: passed ---------------------------------------------------------------------


def test_an_error_result_passes_unchanged_however_large_or_broken(config: Settings, store: Any) -> None:
    result = _text('{"broken": ' + "x" * 5000, isError=True)
    shaped = _shape(result, store, budget=0)
    assert shaped.kind == "passed"
    assert shaped.result is result
    assert shaped.tokens_in == shaped.tokens_out == visible_tokens(result, count_tokens)
    assert _cached_entries(config) == []


def test_non_text_content_passes_unchanged(config: Settings, store: Any) -> None:
    result = {"content": [{"type": "text", "text": json.dumps(_issues(50))}, IMAGE]}
    shaped = _shape(result, store, budget=0)
    assert shaped.kind == "passed"
    assert shaped.result is result
    assert shaped.tokens_out == shaped.tokens_in > 0
    assert _cached_entries(config) == []


def test_small_plain_text_passes_unchanged(config: Settings, store: Any) -> None:
    result = _text("total 3\n-rw-r--r-- a.txt\n-rw-r--r-- b.txt\n")
    shaped = _shape(result, store)
    assert shaped == Shaped(result, "passed", 22, 22)  # the text's o200k tokens, in and out
    assert shaped.result is result
    assert _cached_entries(config) == []


def test_small_plain_text_keeps_its_words_beside_a_structured_content(store: Any) -> None:
    result = _text("Created the file /tmp/x.", structuredContent={"path": "/tmp/x", "size": 3})
    shaped = _shape(result, store)
    assert shaped.result["content"][0]["text"] == "Created the file /tmp/x."


def test_empty_content_passes_unchanged(config: Settings, store: Any) -> None:
    result = {"content": [], "isError": False}
    shaped = _shape(result, store, budget=0)
    assert shaped == Shaped(result, "passed", 0, 0)
    assert _cached_entries(config) == []


def test_small_compact_json_passes_because_compacting_would_not_shrink_it(store: Any) -> None:
    result = _text('{"a":1,"b":[1,2]}')
    shaped = _shape(result, store)
    assert shaped.kind == "passed"
    assert shaped.result is result


def test_small_text_blocks_pass_unchanged_even_when_pretty_json(store: Any) -> None:
    result = _text(json.dumps({"a": [1, 2, 3]}, indent=4), json.dumps({"b": 2}, indent=4))
    shaped = _shape(result, store)
    assert shaped.kind == "passed"
    assert shaped.result is result


# -- shape_result: compacted ----------------------------------------------------------------


def test_small_pretty_json_becomes_compact_json(config: Settings, store: Any) -> None:
    value = {"name": "pflow", "tags": ["a", "b"], "nested": {"x": 1, "y": None}}
    structured = {"something": "else", "n": 2}
    block = {"type": "text", "text": json.dumps(value, indent=2), "annotations": {"priority": 1}}
    result = {"content": [block], "structuredContent": structured, "isError": False}
    shaped = _shape(result, store)
    assert shaped.kind == "compacted"
    assert shaped.tokens_out < shaped.tokens_in == visible_tokens(result, count_tokens)
    assert shaped.tokens_out == visible_tokens(shaped.result, count_tokens)
    out_block = shaped.result["content"][0]
    assert out_block["text"] == '{"name":"pflow","tags":["a","b"],"nested":{"x":1,"y":null}}'
    assert out_block["annotations"] == {"priority": 1}
    assert shaped.result["structuredContent"] is structured
    assert shaped.result["isError"] is False
    assert block["text"] == json.dumps(value, indent=2)  # the input is not modified
    assert _cached_entries(config) == []


def test_compacting_keeps_characters_and_escapes_as_the_server_wrote_them(store: Any) -> None:
    value = {"城市": "東京", "emoji": "🎉🐍", "accent": "café", "rtl": "שלום", "n": [19.90, 1e400]}
    raw = json.dumps(value, indent=2, ensure_ascii=False).replace("19.9,", "19.90,")
    shaped = _shape(_text(raw), store)
    assert shaped.kind == "compacted"
    text = shaped.result["content"][0]["text"]
    assert "東京" in text and "🎉🐍" in text and "\\u" not in text and "19.90" in text and "Infinity" in text
    assert json.loads(text) == json.loads(raw)
    escaped = json.dumps(value, indent=2)  # ASCII escapes stay escapes: the text is the server's, minus spaces
    assert _shape(_text(escaped), store).result["content"][0]["text"] == json.dumps(value, separators=(",", ":"))


def test_compacting_leaves_a_duplicate_structured_content_counted_once(store: Any) -> None:
    value = {"entities": [{"name": "Ada", "entityType": "person"}]}
    result = _text(json.dumps(value["entities"], indent=2), structuredContent=value)
    shaped = _shape(result, store, count=len)
    assert shaped.kind == "compacted"
    compact = json.dumps(value["entities"], separators=(",", ":"))
    assert shaped.tokens_in == len(json.dumps(value["entities"], indent=2))
    assert shaped.tokens_out == len(compact)
    assert shaped.result["structuredContent"] is value


# -- shape_result: cached -------------------------------------------------------------------


def test_large_json_is_cached_and_answered_with_its_structure_as_text(config: Settings, store: Any) -> None:
    value = _issues(60)
    text = json.dumps(value, indent=2)
    result = _text(text)
    shaped = _shape(result, store)
    assert shaped.kind == "cached"
    assert shaped.tokens_in == count_tokens(text) > 1000

    [entry] = _cached_entries(config)
    execution_id = entry.stem
    assert shaped.result == {
        "content": [
            {
                "type": "text",
                "text": f"Too large to show ({shaped.tokens_in:,} tokens), cached as {execution_id}. "
                "Template paths (indented lines extend the path above; ~N average length):\n"
                "  result list, 60 items; each [0]:\n"
                "    .number int\n"
                "    .title str ~65\n"
                "    .labels list, 2 items\n"
                "      [0] str ~2\n"
                "    .user dict\n"
                "      .login str ~6\n"
                "      .id int\n"
                "    .closed bool\n"
                "Fields: 6\n"
                f'Read values: read_fields(execution_id="{execution_id}", field_paths=["result[*].title"]); '
                "[*] reads every item, limit/offset page. "
                'Pass values on unread: "${execution_id:path}" in any argument.',
            }
        ],
        "isError": False,
    }  # no structuredContent: it would repeat the structure as JSON
    assert (
        shaped.tokens_out
        == count_tokens(shaped.result["content"][0]["text"])
        == visible_tokens(shaped.result, count_tokens)
    )
    assert shaped.tokens_out * 10 < shaped.tokens_in
    assert read_fields(execution_id, ["result"], settings=config) == {"result": value}
    assert read_fields(execution_id, ["result[7].user.login"], settings=config) == {"result[7].user.login": "user7"}


def test_the_cached_answer_reads_back_into_the_stores_dict_for_every_corpus_file(config: Settings) -> None:
    """Every path, statistic, hidden name and count the store described is in the text, exactly."""
    described: list[dict[str, Any]] = []

    def keeping(tool: str, args: dict[str, Any], value: Any) -> dict[str, Any]:
        described.append(store_outputs(f"mcp:{tool}", args, {"result": value}, settings=config))
        return described[-1]

    for path in corpus_files():
        shaped = _shape(_text(path.read_text(encoding="utf-8")), keeping, budget=0)
        full = described.pop()
        expected = {key: full[key] for key in ("execution_id", "structure", "field_count") if key in full}
        expected.update({key: full[key] for key in ("hidden", "omitted_paths", "warnings", "page") if key in full})
        if full["filtered"]:
            expected["original_field_count"] = full["original_field_count"]
        answer = cached(shaped.result)
        assert answer.pop("tokens") == shaped.tokens_in
        template = re.sub(r"\[(\*|\d+)\]", "[0]", answer.pop("example"))  # the hint reads [*] or an item
        assert (answer.pop("read_tool"), template in full["structure"]) == ("read_fields", True)
        assert answer == expected, path.name
        assert list(answer["structure"]) == list(full["structure"])


def test_hint_example_is_the_first_string_field(store: Any) -> None:
    value = {"count": 3, "flag": True, "name": "x" * 50}
    shaped = _shape(_text(json.dumps(value)), store, budget=0)
    assert cached(shaped.result)["example"] == "result.name"


def test_hint_example_without_string_fields_is_the_first_path(store: Any) -> None:
    shaped = _shape(_text("[1, 2, 3]"), store, budget=0)
    assert cached(shaped.result)["example"] == "result"


def test_hint_example_is_a_valid_literal_for_a_key_with_quotes(store: Any) -> None:
    shaped = _shape(_text(json.dumps({'say "hi"': "x" * 40})), store, budget=0)
    assert 'field_paths=["result[\\"say \\\\\\"hi\\\\\\"\\"]"]' in shaped.result["content"][0]["text"]
    answer = cached(shaped.result)
    assert answer["example"] == 'result["say \\"hi\\""]'
    assert list(answer["structure"]) == ["result", 'result["say \\"hi\\""]']


def test_large_plain_text_is_cached_as_its_lines(config: Settings, store: Any) -> None:
    text = "\n".join(f"{i:05d} INFO request handled in {i % 97} ms path=/api/v1/items/{i}" for i in range(400))
    shaped = _shape(_text(text + "\n"), store)
    assert shaped.kind == "cached"
    described = cached(shaped.result)
    assert described["structure"]["result"] == {"type": "list", "length": 401}  # the last line is empty
    stored = read_fields(described["execution_id"], ["result"], settings=config)["result"]
    assert "\n".join(stored) == text + "\n"
    assert stored[399].startswith("00399 INFO")


def test_large_text_with_a_structured_content_that_says_more_caches_the_structured_content(
    config: Settings, store: Any
) -> None:
    structured = {"rows": _issues(40)}
    shaped = _shape(_text("Found 40 issues.", structuredContent=structured), store)
    assert shaped.kind == "cached"
    described = cached(shaped.result)
    assert read_fields(described["execution_id"], ["result"], settings=config) == {"result": structured}


def test_large_text_with_a_wrapper_structured_content_caches_the_text_lines(config: Settings, store: Any) -> None:
    text = "\n".join(f"line {i} of a file that the filesystem server read" for i in range(300))
    shaped = _shape(_text(text, structuredContent={"content": text}), store)
    assert shaped.kind == "cached"
    assert shaped.tokens_in == count_tokens(text)  # the wrapper is not counted twice
    described = cached(shaped.result)
    assert read_fields(described["execution_id"], ["result"], settings=config) == {"result": text.splitlines()}


def test_several_large_text_blocks_are_cached_as_one_value_per_block(config: Settings, store: Any) -> None:
    first = _issues(30)
    second = "\n".join(f"note {i}" for i in range(200))
    shaped = _shape(_text(json.dumps(first, indent=2), second), store)
    assert shaped.kind == "cached"
    described = cached(shaped.result)
    assert read_fields(described["execution_id"], ["result"], settings=config) == {"result": [first, second]}


def test_only_structured_content_over_budget_is_cached(config: Settings, store: Any) -> None:
    structured = {"items": _issues(3)}
    shaped = _shape({"content": [], "structuredContent": structured}, store, budget=10, count=len)
    assert shaped.kind == "cached"
    described = cached(shaped.result)
    assert read_fields(described["execution_id"], ["result"], settings=config) == {"result": structured}


def test_large_emoji_and_unicode_text_reads_back_exactly(config: Settings, store: Any) -> None:
    lines = [f"{i} 🎉 日本語のテキスト café naïve ﷽ 👩‍👩‍👧 \u200b end" for i in range(200)]
    shaped = _shape(_text("\n".join(lines)), store)
    assert shaped.kind == "cached"
    described = cached(shaped.result)
    assert read_fields(described["execution_id"], ["result"], settings=config) == {"result": lines}


def test_cached_answer_carries_omitted_paths_when_the_structure_is_cut(tmp_path: Path) -> None:
    narrow = Settings(cache_dir=tmp_path / "narrow", failure_log=tmp_path / "fail.jsonl", max_paths=3)

    def narrow_store(tool: str, args: dict[str, Any], value: Any) -> dict[str, Any]:
        return store_outputs(f"mcp:{tool}", args, {"result": value}, settings=narrow)

    value = {"alpha": 1, "beta": "x", "gamma": [1, 2], "delta": {"e": True}, "zeta": None}
    shaped = _shape(_text(json.dumps(value)), narrow_store, budget=0)
    described = cached(shaped.result)
    assert len(described["structure"]) == 3
    assert described["omitted_paths"] == 5
    assert "warnings" not in described
    assert read_fields(described["execution_id"], ["result"], settings=narrow) == {"result": value}


def test_cached_answer_leaves_out_the_store_fields_the_agent_does_not_need(store: Any) -> None:
    shaped = _shape(_text(json.dumps({"a": "b" * 30})), store, budget=0)
    answer = cached(shaped.result)
    assert set(answer) == {"execution_id", "tokens", "structure", "field_count", "read_tool", "example"}
    assert "mcp:tool" not in shaped.result["content"][0]["text"]  # the node type the store records


# -- shape_result: malformed and budget boundary ----------------------------------------------


@pytest.mark.parametrize("budget", [0, 1000])
def test_malformed_json_text_raises_so_the_caller_falls_back(config: Settings, store: Any, budget: int) -> None:
    with pytest.raises(MalformedJSONError):
        _shape(_text('{"a": 1,'), store, budget=budget)
    assert _cached_entries(config) == []


def test_plain_text_exactly_at_the_budget_passes_and_one_more_is_cached(config: Settings, store: Any) -> None:
    at_budget = _text("x" * 100)
    shaped = _shape(at_budget, store, budget=100, count=len)
    assert shaped == Shaped(at_budget, "passed", 100, 100)
    assert _cached_entries(config) == []

    over = _text("x" * 101)
    shaped = _shape(over, store, budget=100, count=len)
    assert shaped.kind == "cached"
    assert shaped.tokens_in == 101
    assert len(_cached_entries(config)) == 1


def test_json_exactly_at_the_budget_is_compacted_and_one_more_is_cached(store: Any) -> None:
    text = json.dumps({"k": "v" * 20}, indent=2)
    shaped = _shape(_text(text), store, budget=len(text), count=len)
    assert shaped.kind == "compacted"
    assert shaped.tokens_in == len(text)
    assert _shape(_text(text), store, budget=len(text) - 1, count=len).kind == "cached"


def test_a_duplicate_structured_content_does_not_push_a_result_over_the_budget(store: Any) -> None:
    text = "y" * 100
    result = _text(text, structuredContent={"content": text})
    assert _shape(result, store, budget=100, count=len).kind == "passed"
    other = _text(text, structuredContent={"content": "different"})
    assert _shape(other, store, budget=100, count=len).kind == "cached"


# -- properties ------------------------------------------------------------------------------

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10))
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=15,
)
json_containers = st.one_of(
    st.lists(json_values, max_size=4), st.dictionaries(st.text(max_size=6), json_values, max_size=4)
)
indents = st.sampled_from([None, 0, 1, 2, 4, "\t"])

_fixture_ok = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None, max_examples=examples(200)
)


@_fixture_ok
@given(value=json_values, indent=indents)
def test_shaping_within_budget_never_adds_tokens_and_keeps_the_value(store: Any, value: Any, indent: Any) -> None:
    result = _text(json.dumps(value, indent=indent))
    shaped = _shape(result, store, budget=HUGE)
    assert shaped.kind in {"passed", "compacted"}
    assert shaped.tokens_in == visible_tokens(result, count_tokens)
    assert shaped.tokens_out <= shaped.tokens_in
    assert shaped.tokens_out == visible_tokens(shaped.result, count_tokens)
    assert json.loads(shaped.result["content"][0]["text"]) == value


structured_choices = st.sampled_from(["equal", "raw-wrapper", "value-wrapper", "other"])


@_fixture_ok
@given(value=json_containers, indent=indents, choice=structured_choices, other=json_values)
def test_shaping_with_structured_content_never_adds_tokens_and_leaves_it_alone(
    store: Any, value: Any, indent: Any, choice: str, other: Any
) -> None:
    text = json.dumps(value, indent=indent)
    structured = {
        "equal": value,
        "raw-wrapper": {"content": text},
        "value-wrapper": {"items": value},
        "other": {"other": other, "and": 1},
    }[choice]
    result = _text(text, structuredContent=structured)
    shaped = _shape(result, store, budget=HUGE)
    assert shaped.tokens_out <= shaped.tokens_in == visible_tokens(result, count_tokens)
    if choice == "raw-wrapper" and shaped.result["content"][0]["text"] != text:
        assert "structuredContent" not in shaped.result  # a copy of the old layout goes with it
    else:
        assert shaped.result["structuredContent"] is structured
    assert json.loads(shaped.result["content"][0]["text"]) == value


@_fixture_ok
@given(value=json_containers, indent=indents)
def test_every_json_container_round_trips_through_the_cache(
    config: Settings, store: Any, value: Any, indent: Any
) -> None:
    shaped = _shape(_text(json.dumps(value, indent=indent)), store, budget=0)
    assert shaped.kind == "cached"
    described = cached(shaped.result)
    assert read_fields(described["execution_id"], ["result"], settings=config) == {"result": value}


@pytest.mark.parametrize("text", ["null", "42", "true", '"a string"', "-1.5e3"])
def test_json_scalars_are_not_json_like_and_cache_as_their_lines(config: Settings, store: Any, text: str) -> None:
    shaped = _shape(_text(text), store, budget=0)
    assert shaped.kind == "cached"
    described = cached(shaped.result)
    assert read_fields(described["execution_id"], ["result"], settings=config) == {"result": [text]}


# -- text that starts with a bracket but is not JSON ------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[FILE] a.txt\n[DIR] b",
        "[note] remember",
        "[nullable] field",
        "{x} is a set",
        "[ERROR] disk full",
        "[]x",
        "[1] A cited title",
        "[2024-05-01 12:00:00] INFO started",
        "[1]\n[2]",
    ],
)
def test_bracketed_plain_text_is_not_taken_for_broken_json(text: str) -> None:
    assert parse_text(text) == (False, text)


@pytest.mark.parametrize("text", ["[null]", "[ 1, 2]", '[\n  {"a": 1}]', "[-1]", '["x"]', "[[]]", "{ }", '{"a":1}'])
def test_json_that_starts_with_a_bracket_is_parsed(text: str) -> None:
    assert parse_text(text) == (True, json.loads(text))


def test_a_large_filesystem_listing_is_cached_as_lines_and_a_small_one_passes(config: Settings, store: Any) -> None:
    """server-filesystem's list_directory answers "[FILE] name" lines (and the same text wrapped as
    structuredContent); they must be shaped, not logged as broken JSON."""
    listing = "\n".join(f"[FILE] report-{index:03d}.csv" for index in range(300)) + "\n[DIR] archive"
    shaped = _shape(_text(listing, structuredContent={"content": listing}), store)
    assert shaped.kind == "cached"
    stored = read_fields(cached(shaped.result)["execution_id"], ["result"], settings=config)["result"]
    assert stored == listing.splitlines()
    small = _text("[FILE] a.txt\n[DIR] b", structuredContent={"content": "[FILE] a.txt\n[DIR] b"})
    assert _shape(small, store).kind == "passed"


def test_a_cached_answer_keeps_the_plain_words_beside_the_data_and_the_meta(config: Settings, store: Any) -> None:
    rows = {"rows": [{"id": i, "name": f"row {i}"} for i in range(500)]}
    result = _text("Found 500 rows; 3 more pages, use page=2.", structuredContent=rows, _meta={"cursor": "p2"})
    shaped = _shape(result, store)
    assert shaped.kind == "cached"
    assert cached(shaped.result)["note"] == "Found 500 rows; 3 more pages, use page=2."
    assert shaped.result["_meta"] == {"cursor": "p2"}
    stored = read_fields(cached(shaped.result)["execution_id"], ["result"], settings=config)["result"]
    assert stored == rows
    plain_big = _text(json.dumps(rows))  # JSON text: no note to keep
    assert "note" not in cached(_shape(plain_big, store).result)


def test_a_note_of_several_lines_ends_the_cached_answer_whole(store: Any) -> None:
    note = "Found 500 rows.\nRead values: not ours\n  indented"
    shaped = _shape(_text(note, structuredContent={"rows": list(range(500))}), store, budget=100)
    assert shaped.result["content"][0]["text"].endswith("\nThe server's note: " + note)
    assert cached(shaped.result)["note"] == note


def test_a_filtered_cached_answer_counts_the_fields_shown_of_all_and_names_the_hidden_ones(
    config: Settings, store: Any
) -> None:
    record = {f"field_{index:02}": f"value {index}" for index in range(60)}
    shaped = _shape(_text(json.dumps(record)), store, budget=0)
    answer = cached(shaped.result)
    assert (answer["original_field_count"], len(answer["structure"]) - 1) == (60, answer["field_count"])
    [hidden] = answer["hidden"].values()
    shown = [path.removeprefix("result.") for path in answer["structure"] if path != "result"]
    assert sorted(shown + hidden["names"]) == sorted(record)
    lines = shaped.result["content"][0]["text"].split("\n")
    assert f"Fields: {answer['field_count']} of 60 shown (the others are named and read back too)" in lines
    [execution_id] = [entry.stem for entry in _cached_entries(config)]
    hidden_path = "result." + hidden["names"][0]
    assert read_fields(execution_id, [hidden_path], settings=config) == {hidden_path: record[hidden["names"][0]]}


@pytest.mark.parametrize("hostile_shown", [True, False], ids=["as-paths", "as-hidden-names"])
def test_hostile_keys_read_back_from_the_cached_answer_exactly(config: Settings, hostile_shown: bool) -> None:
    """Keys that look like the answer's own lines, or hold newlines, quotes, dots and brackets, come back
    as the very paths the store listed, or the names it hid, and each reads its value."""
    hostile = ["a\nb", " lead", "other keys: x", "", "ключ 🐢", 'q"uote', "Fields: 3", "x.y", "[0]", "\ud800"]
    # Over 50 fields, so some are hidden: as strings the hostile keys are all shown; as numbers, some are not.
    record: dict[str, Any] = {key: f"value {index}" if hostile_shown else index for index, key in enumerate(hostile)}
    record.update({f"filler_{index:02}": index if hostile_shown else f"text {index}" for index in range(55)})
    described: list[dict[str, Any]] = []

    def keeping(tool: str, args: dict[str, Any], value: Any) -> dict[str, Any]:
        described.append(store_outputs(f"mcp:{tool}", args, {"result": value}, settings=config))
        return described[-1]

    text = json.dumps({"items": [record, record]})
    answer = cached(_shape(_text(text), keeping, budget=0).result)
    [full] = described
    assert (answer["structure"], answer["hidden"]) == (full["structure"], full["hidden"])
    named = [path.removeprefix("result.items[0]") for path in full["structure"] if path.startswith("result.items[0]")]
    hidden_names = full["hidden"]["result.items[0]"]["names"]
    assert len(named) + len(hidden_names) + full["hidden"]["result.items[0]"].get("more", 0) == len(record)
    shown = {json.loads(name[1:-1]) if name.startswith("[") else name.removeprefix(".") for name in named}
    assert set(hostile) <= shown | set(hidden_names)  # every one in the view, as a path or a name
    if hostile_shown:
        assert set(hostile) <= shown
    else:  # which the learned filter hides is its choice; some are, and they come back as names
        assert {"[0]", "Fields: 3"} <= set(hidden_names)
    for path in [*full["structure"], *(f"result.items[0][{json.dumps(n)}]" for n in hidden_names)]:
        found = read_fields(answer["execution_id"], [path.replace("[0]", "[1]", 1)], settings=config)
        assert list(found.values()) != [None], path


# -- edit_fields' answer through the proxy ------------------------------------------------------


def test_edit_text_names_the_new_id_and_only_what_changed() -> None:
    changes = {
        "execution_id": "exec-1763463202-0cd0c8fe",
        "edited_from": "exec-1763463201-00000000",
        "structure": {"result.items": {"type": "list", "length": 3}, "result.items[0].done": {"type": "bool"}},
        "field_count": 12,
        "removed_paths": ["result.draft", 'result["a, b"]'],
        "note": "Only what changed; every other path is as in exec-1763463201-00000000.",
        "warnings": ["a warning"],
    }
    assert edit_text(changes) == (
        "Edited into exec-1763463202-0cd0c8fe; every path not listed here is as before. Changed paths:\n"
        "  result.items list, 3 items\n"
        "    [0].done bool\n"
        'Removed paths: ["result.draft", "result[\\"a, b\\"]"]\n'
        "Warning: a warning"
    )
    answer = {"content": [{"type": "text", "text": edit_text(changes)}], "isError": False}
    assert edited(answer) == {key: changes[key] for key in ("execution_id", "structure", "removed_paths", "warnings")}


def test_edit_text_says_so_when_no_path_changed_its_statistics() -> None:
    changes = {"execution_id": "exec-1763463202-0cd0c8fe", "edited_from": "x", "structure": {}, "field_count": 1}
    assert edit_text(changes) == (
        "Edited into exec-1763463202-0cd0c8fe; every path not listed here is as before. "
        "No path changed its type or statistics."
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1, "a": 2}', '{"a":1,"a":2}'),
        ("[19.90, 1e400, -0.0, 1E+2]", "[19.90,1e400,-0.0,1E+2]"),
        ('{"s": "x  \\" y\\\\", "t": "\\u00e9  "}', '{"s":"x  \\" y\\\\","t":"\\u00e9  "}'),
        ("[ ]", "[]"),
        ("{\n\t}", "{}"),
    ],
)
def test_strip_whitespace_keeps_every_token_as_written(text: str, expected: str) -> None:
    assert strip_whitespace(text) == expected
