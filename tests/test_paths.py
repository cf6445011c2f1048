"""The path grammar and resolution, driven by data (like jmespath's compliance files).

``tests/data/path_cases.json`` is a list of suites ``{description, given, cases}``; each
case is ``{path, result}`` (what ``read_fields`` returns: a list for ``[*]`` and JSONPath)
or ``{path, error, message | message_lines}`` with the exact text of the error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pflow_structure.errors import PathNotFoundError, PathSyntaxError
from pflow_structure.paths import (
    WILDCARD,
    format_path,
    is_jsonpath,
    is_plain_key,
    parse_path,
    quote_key,
    resolve,
)
from pflow_structure.service import read_fields_detailed, store_outputs

CASES_FILE = Path(__file__).parent / "data" / "path_cases.json"
SUITES: list[dict[str, Any]] = json.loads(CASES_FILE.read_text(encoding="utf-8"))
SYNTAX_HINT = 'Paths look like result[0].title, result[*].name, data["content-type"] or $..title (JSONPath).'


def _cases(kind: str) -> list[Any]:
    params = []
    for suite_number, suite in enumerate(SUITES):
        for case in suite["cases"]:
            if ("result" in case) == (kind == "result"):
                params.append(pytest.param(suite["given"], case, id=f"{suite_number}:{case['path']}"))
    return params


def _value(root: Any, path: str) -> Any:
    matches, multi = resolve(root, path)
    values = [match.value for match in matches]
    return values if multi else values[0]


def _expected_message(case: dict[str, Any]) -> str:
    if "message_lines" in case:
        return "\n".join([*case["message_lines"], SYNTAX_HINT])
    return str(case["message"])


def test_the_case_file_has_every_kind_of_case() -> None:
    kinds = {case.get("error", "result") for suite in SUITES for case in suite["cases"]}
    assert kinds == {"result", "not_found", "syntax"}
    assert sum(len(suite["cases"]) for suite in SUITES) == 91


@pytest.mark.parametrize(("given", "case"), _cases("result"))
def test_path_resolves_to_expected_value(given: Any, case: dict[str, Any]) -> None:
    assert _value(given, case["path"]) == case["result"]


@pytest.mark.parametrize(("given", "case"), _cases("error"))
def test_path_error_has_exact_message(given: Any, case: dict[str, Any]) -> None:
    error = PathSyntaxError if case["error"] == "syntax" else PathNotFoundError
    with pytest.raises(error) as caught:
        resolve(given, case["path"])
    assert str(caught.value) == _expected_message(case)


@pytest.mark.parametrize("suite", SUITES, ids=[suite["description"] for suite in SUITES])
def test_read_fields_on_a_cached_execution_agrees_with_the_case_file(suite: dict[str, Any]) -> None:
    run = store_outputs("test-node", {}, suite["given"])
    paths = [case["path"] for case in suite["cases"]]
    readout = read_fields_detailed(run["execution_id"], paths)
    # read_result: what read_fields answers where resolve's flat matches are grouped (nested wildcards)
    expected_values = {case["path"]: case.get("read_result", case.get("result")) for case in suite["cases"]}
    expected_errors = {case["path"]: _expected_message(case) for case in suite["cases"] if "error" in case}
    assert readout.values == expected_values
    assert readout.errors == expected_errors


# -- parsing ---------------------------------------------------------------------------------


def test_parse_splits_names_indices_and_wildcards() -> None:
    assert parse_path("result[0].labels[-1].name") == ("result", 0, "labels", -1, "name")
    assert parse_path("versions[*].date") == ("versions", WILDCARD, "date")


def test_parse_reads_both_quote_styles_as_the_same_key() -> None:
    assert parse_path('a["x.y"]') == parse_path("a['x.y']") == ("a", "x.y")


def test_single_quoted_key_keeps_a_backslash_that_escapes_nothing() -> None:
    assert parse_path(r"a['C:\temp']") == ("a", "C:\\temp")


def test_single_quoted_key_unescapes_quote_and_backslash() -> None:
    assert parse_path(r"a['it\'s \\ ok']") == ("a", "it's \\ ok")


def test_double_quoted_key_takes_json_escapes() -> None:
    assert parse_path(r'a["\u00e9\n\"\\"]') == ("a", 'é\n"\\')


def test_bare_names_may_hold_dashes_and_unicode_letters() -> None:
    assert parse_path("user-agent.café_2") == ("user-agent", "café_2")


def test_index_with_too_many_digits_is_a_syntax_error() -> None:
    with pytest.raises(PathSyntaxError) as caught:
        parse_path("a[" + "9" * 5000 + "]")
    assert caught.value.column == 2
    assert caught.value.reason == "the index has too many digits"


@pytest.mark.parametrize(
    "path",
    ["$" + "[?@" * 200 + "]" * 200, "$[?" + "(" * 1000 + "@.a" + ")" * 1000 + "]"],
    ids=["filters in filters", "parentheses"],
)
def test_a_jsonpath_nested_past_the_recursion_limit_is_a_syntax_error(path: str) -> None:
    with pytest.raises(PathSyntaxError) as caught:
        resolve({"a": [{"a": [{"a": 1}]}]}, path)
    assert caught.value.reason == (
        "JSONPath (RFC 9535): filters or parentheses nested too deeply to evaluate; nest fewer levels"
    )


def test_non_string_path_is_a_syntax_error() -> None:
    with pytest.raises(PathSyntaxError) as caught:
        parse_path(3)  # type: ignore[arg-type]
    assert caught.value.reason == "a path must be a string, not int"


def test_syntax_error_is_also_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_path("a[")


def test_not_found_error_is_also_a_lookup_error_and_keeps_the_failing_segment() -> None:
    with pytest.raises(LookupError) as caught:
        resolve({"a": {"b": 1}}, "a.c.d")
    assert isinstance(caught.value, PathNotFoundError)
    assert caught.value.segment_index == 1
    assert caught.value.suggestions == []


# -- formatting ------------------------------------------------------------------------------


def test_format_writes_plain_keys_bare_and_others_quoted() -> None:
    assert format_path(["result", 0, "content-type", WILDCARD, "x.y", ""]) == 'result[0]["content-type"][*]["x.y"][""]'


def test_format_quotes_a_first_key_that_is_not_plain() -> None:
    assert format_path(["1st", "ok"]) == '["1st"].ok'


def test_format_keeps_unicode_readable_inside_quotes() -> None:
    assert format_path(["a", "é🎉"]) == 'a["é🎉"]'


def test_format_escapes_quotes_backslashes_and_control_characters() -> None:
    assert format_path(["a", 'say "hi"\\\n']) == 'a["say \\"hi\\"\\\\\\n"]'


@pytest.mark.parametrize(
    ("key", "plain"),
    [("title", True), ("_id", True), ("v2", True), ("content-type", False), ("é", False), ("2x", False), ("", False)],
)
def test_plain_keys_are_ascii_identifiers(key: str, plain: bool) -> None:
    assert is_plain_key(key) is plain


def test_quote_key_uses_json_string_syntax() -> None:
    assert quote_key("it's") == '["it\'s"]'


# -- routing to JSONPath ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "jsonpath"),
    [
        ("$..title", True),
        ("$", True),
        ("result[?(@.state=='open')].title", True),
        ("a['x'][?(@.b)]", True),
        ('k["[?"]', False),
        ("k['[?']", False),
        ('k["a\\"[?"]', False),
        ("result[0].title", False),
    ],
)
def test_only_a_dollar_or_a_filter_outside_quotes_means_jsonpath(path: str, jsonpath: bool) -> None:
    assert is_jsonpath(path) is jsonpath


def test_quoted_key_holding_a_filter_opener_reads_one_value_not_a_list() -> None:
    assert resolve({"k": {'a"[?': 1}}, 'k["a\\"[?"]') == resolve({"k": {'a"[?': 1}}, format_path(["k", 'a"[?']))
    matches, multi = resolve({"k": {'a"[?': 1}}, 'k["a\\"[?"]')
    assert [m.value for m in matches] == [1]
    assert multi is False


def test_jsonpath_negative_index_reports_the_non_negative_concrete_path() -> None:
    matches, _ = resolve({"result": [10, 20, 30]}, "$.result[-1]")
    assert [(m.path, m.value) for m in matches] == [(("result", 2), 30)]


def test_list_at_the_root_gets_a_reason_and_no_unparsable_suggestions() -> None:
    with pytest.raises(PathNotFoundError) as caught:
        resolve([1, 2], "result")
    assert str(caught.value) == "result: the value is a list of 2 items, not a dict."


def test_wildcard_reports_the_concrete_path_of_every_match() -> None:
    matches, multi = resolve({"d": {"k1": {"v": 1}, "k2": {"v": 2}}}, "d[*].v")
    assert [m.path for m in matches] == [("d", "k1", "v"), ("d", "k2", "v")]
    assert multi is True


def test_string_nested_deeper_than_the_json_parser_allows_is_not_read_through() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    with pytest.raises(PathNotFoundError) as caught:
        resolve({"a": deep}, "a[0]")
    assert caught.value.reason == "[0] needs a list but found a string of 200000 chars."


def test_the_wildcard_stays_one_object_through_pickle_and_copy() -> None:
    """Parsed paths cross process boundaries (xdist, multiprocessing): ``is WILDCARD`` must still hold."""
    import copy
    import pickle

    parsed = parse_path("a[*].b")
    assert pickle.loads(pickle.dumps(parsed)) == parsed
    assert pickle.loads(pickle.dumps(WILDCARD)) is WILDCARD
    assert copy.deepcopy(WILDCARD) is WILDCARD and repr(WILDCARD) == "WILDCARD"


def test_a_quoted_key_that_is_one_backslash_parses_and_a_filter_after_it_is_jsonpath() -> None:
    """An escape skips exactly the escaped character: the quote right after it closes the key."""
    assert parse_path('a["\\\\"].b') == ("a", "\\", "b")
    assert format_path(("a", "\\", "b")) == 'a["\\\\"].b'
    assert is_jsonpath('a["\\\\"][?(@.x)]') is True
    assert is_jsonpath('a["\\"[?"]') is False  # the [? is inside the quoted key


def test_a_template_covers_a_path_only_where_it_holds_the_wildcard() -> None:
    from pflow_structure.paths import template_covers

    assert template_covers("result.methods[*].path", "result.methods.list.path") is True
    assert template_covers("a[*].b", "a[3].b") is True
    assert template_covers("a[0].b", "a[3].b") is False
    assert template_covers("a.x", "a.y") is False
    assert template_covers("a[*]", "a[0].b") is False


def test_a_key_on_a_list_says_it_is_a_list_and_suggests_the_item_paths() -> None:
    with pytest.raises(PathNotFoundError) as caught:
        resolve({"a": [1, 2, 3]}, "a.b")
    assert str(caught.value) == "a.b: a is a list of 3 items, not a dict. Did you mean a[0].b, a[*].b?"


def test_describe_value_names_the_kind_and_size() -> None:
    from pflow_structure.paths.resolve import describe_value

    assert [describe_value(v) for v in ([1, 2, 3], {"k": 1}, [], True)] == [
        "a list of 3 items",
        "a dict of 1 key",
        "a list of 0 items",
        "a bool",
    ]


class _Tripwire(list):  # type: ignore[type-arg]
    """A list that fails when its items are read: a resolver that reaches it read past what it needed."""

    def __iter__(self) -> Any:
        raise AssertionError("read past the page")


@pytest.mark.parametrize("path", ["$..*", "$.*"])
def test_a_jsonpath_read_with_a_stop_visits_no_node_past_it(path: str) -> None:
    root = {"a": [1, 2, 3], "b": _Tripwire([4])}
    matches, _ = resolve(root, path, stop=2)
    assert [(m.path, m.value) for m in matches] == [(("a",), [1, 2, 3]), (("b",), [4])]


def test_a_stop_reads_on_past_items_that_lack_the_path_until_one_has_it() -> None:
    root = {"result": [{}, {}, {"n": 1}, {"n": 2}, {"n": 3}]}
    matches, _ = resolve(root, "result[*].n", stop=2)
    assert [(m.path, m.value, m.missing) for m in matches] == [
        (("result", 0), None, True),
        (("result", 1), None, True),
        (("result", 2, "n"), 1, False),
    ]
