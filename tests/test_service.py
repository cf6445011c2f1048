"""The application service: what every adapter calls."""

from __future__ import annotations

import pytest

from pflow_structure import ParameterError, read_fields, read_fields_detailed, store_outputs
from pflow_structure.settings import Settings
from tests.contract import assert_structure_reads_back


def test_a_bare_value_is_stored_and_read_back_as_result() -> None:
    run = store_outputs("custom", {}, [{"title": "a"}, {"title": "b"}])
    assert run["structure"]["result"] == {"type": "list", "length": 2}
    assert read_fields(run["execution_id"], ["result[1].title"]) == {"result[1].title": "b"}
    outputs = Settings.from_env().cache().get(run["execution_id"]).outputs
    assert_structure_reads_back(outputs, run["structure"])


def test_field_paths_given_as_one_string_is_a_clear_error() -> None:
    run = store_outputs("custom", {}, {"result": 1})
    with pytest.raises(ParameterError) as caught:
        read_fields(run["execution_id"], "result")  # type: ignore[arg-type]
    assert str(caught.value) == "field_paths must be a list of paths, not one string; pass ['result']"


def test_negative_paging_is_a_clear_error() -> None:
    run = store_outputs("custom", {}, {"result": [1, 2]})
    with pytest.raises(ParameterError, match=r"offset \(-1\) and limit \(None\) must not be negative"):
        read_fields(run["execution_id"], ["result[*]"], offset=-1)


def test_wildcards_page_with_offset_and_limit() -> None:
    run = store_outputs("custom", {}, {"result": list(range(10_000))})
    assert read_fields(run["execution_id"], ["result[*]"], offset=9_998, limit=5) == {"result[*]": [9_998, 9_999]}


def test_each_path_is_read_independently() -> None:
    run = store_outputs("custom", {}, {"result": {"a": 1}})
    assert read_fields(run["execution_id"], ["result.a", "result[", "result.b", "result.a"]) == {
        "result.a": 1,
        "result[": None,
        "result.b": None,
    }


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("PFLOW_STRUCTURE_TTL_HOURS", "nan", "PFLOW_STRUCTURE_TTL_HOURS='nan' must be a positive finite number"),
        ("PFLOW_STRUCTURE_TTL_HOURS", "-1", "PFLOW_STRUCTURE_TTL_HOURS='-1' must be a positive finite number"),
        ("PFLOW_STRUCTURE_MAX_PATHS", "0.5", "PFLOW_STRUCTURE_MAX_PATHS='0.5' must be a whole number of at least 1"),
        ("PFLOW_STRUCTURE_MAX_CACHE_SIZE", "0.5", "PFLOW_STRUCTURE_MAX_CACHE_SIZE='0.5' is less than one byte"),
        ("PFLOW_STRUCTURE_MAX_CACHE_SIZE", "lots", "PFLOW_STRUCTURE_MAX_CACHE_SIZE='lots' is not a size"),
    ],
)
def test_bad_settings_name_the_variable_and_the_fix(
    name: str, value: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ParameterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Settings.from_env()


def test_the_settings_defaults_are_the_core_modules_own() -> None:
    """settings.py writes the core defaults out (building settings must not import the filter, the
    structure inference or the reference resolver); they cannot drift from their sources."""
    from pflow_structure import settings
    from pflow_structure.filtering import options
    from pflow_structure.structure import DEFAULT_MAX_PATHS
    from pflow_structure.values.references import DEFAULT_MAX_REFERENCE_BYTES

    assert settings.DEFAULT_MAX_PATHS == DEFAULT_MAX_PATHS
    assert settings.DEFAULT_MAX_REFERENCE_BYTES == DEFAULT_MAX_REFERENCE_BYTES
    assert settings.FILTER_MODES == options.MODES
    assert settings.DEFAULT_FILTER_THRESHOLD == options.DEFAULT_THRESHOLD
    assert settings.DEFAULT_FILTER_TARGET == options.DEFAULT_TARGET
    assert settings.DEFAULT_FILTER_TIMEOUT == options.DEFAULT_TIMEOUT
    assert Settings().filtering == options.FilterOptions()
    assert Settings.from_env({}).filtering == options.FilterOptions()


def test_the_filter_options_come_from_the_environment_when_first_used() -> None:
    from pflow_structure.filtering.options import FilterOptions

    env = {"PFLOW_STRUCTURE_FILTER": " Heuristic ", "PFLOW_STRUCTURE_FILTER_TARGET": "12", "X_API_KEY": "k"}
    built = Settings.from_env(env)
    expected = FilterOptions(mode="heuristic", target=12, keys_set=frozenset({"X_API_KEY"}))
    assert built.filtering == expected
    assert built.filtering is built.filtering  # built once
    assert built == Settings.from_env(env)
    assert built.replace(max_paths=7).filtering == expected
    assert Settings(filtering=expected).filtering is expected


def test_a_bad_filter_variable_is_named_before_the_variables_checked_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The filter's variables are checked where they always were: an error names the first bad one."""
    monkeypatch.setenv("PFLOW_STRUCTURE_FILTER", "sometimes")
    monkeypatch.setenv("PFLOW_STRUCTURE_ANSWER_BUDGET", "0")
    with pytest.raises(ParameterError, match="PFLOW_STRUCTURE_FILTER='sometimes' is not a filter mode"):
        Settings.from_env()
    monkeypatch.setenv("PFLOW_STRUCTURE_MAX_PATHS", "0.5")
    with pytest.raises(ParameterError, match=r"PFLOW_STRUCTURE_MAX_PATHS='0\.5'"):
        Settings.from_env()


def test_an_int_too_long_for_json_text_is_kept_as_hex() -> None:
    run = store_outputs("custom", {}, {"big": 10**5000, "small": 5})
    assert run["warnings"] == ["big: an int of 16610 bits is stored as hex text"]
    value = read_fields(run["execution_id"], ["big"])["big"]
    assert int(value, 16) == 10**5000


def test_two_wildcard_columns_over_one_list_line_up_item_by_item() -> None:
    outputs = {"result": [{"n": 1, "m": {"t": "a"}}, {"n": 2, "m": None}, {"n": 3}]}
    run = store_outputs("custom", {}, outputs)
    readout = read_fields_detailed(run["execution_id"], ["result[*].n", "result[*].m.t"])
    assert readout.values == {"result[*].n": [1, 2, 3], "result[*].m.t": ["a", None, None]}
    assert readout.missing == {"result[*].m.t": 2}


def test_a_literal_item_zero_path_points_to_the_items_that_have_it() -> None:
    run = store_outputs("custom", {}, {"result": [{"a": 1}, {"a": 2, "b": {"c": 3}}]})
    readout = read_fields_detailed(run["execution_id"], ["result[0].b.c"])
    assert readout.values == {"result[0].b.c": None}
    assert readout.errors["result[0].b.c"] == (
        "result[0].b.c: no key 'b' here. Keys here: a. Other items have it: result[*].b.c finds 1. "
        "Did you mean result[*].b.c?"
    )


def test_an_index_on_a_dict_with_that_digit_as_a_key_suggests_the_quoted_key() -> None:
    run = store_outputs("custom", {}, {"result": {"0": "zero"}})
    readout = read_fields_detailed(run["execution_id"], ["result[0]"])
    assert readout.errors["result[0]"].endswith('Did you mean result["0"]?')


def test_a_path_that_is_not_a_string_gives_none_with_a_reason() -> None:
    run = store_outputs("custom", {}, {"result": 1})
    readout = read_fields_detailed(run["execution_id"], [1])  # type: ignore[list-item]
    assert readout.values == {"1": None}
    assert "a path must be a string, not int" in readout.errors["1"]


def test_many_cycle_notes_are_summarised_in_the_warnings() -> None:
    class Child:
        def __init__(self, parent: object) -> None:
            self.parent = parent

    class Parent:
        def __init__(self) -> None:
            self.children = [Child(self) for _ in range(50)]

    run = store_outputs("custom", {}, {"tree": Parent()})
    warnings = run["warnings"]
    assert len(warnings) == 6
    assert warnings[0] == "circular reference at tree.children[0].parent cut (it points back to tree)"
    assert warnings[-1] == f"... and 45 more like these (all are in the cache entry {run['execution_id']})"
    entry = Settings.from_env().cache().get(run["execution_id"])
    assert len(entry.notes) == 50


def test_nested_wildcards_keep_their_parents_and_line_up_with_the_inner_items() -> None:
    run = store_outputs("custom", {}, {"a": [{"b": [{"x": 1}]}, {"b": [{"y": 1}, {"y": 2}]}, {"c": 0}]})
    values = read_fields(run["execution_id"], ["a[*].b[*].x", "a[*].b[*].y"])
    assert values == {"a[*].b[*].x": [[1], [None, None], []], "a[*].b[*].y": [[None], [1, 2], []]}


def test_the_every_item_hint_keeps_the_failing_index() -> None:
    outputs = {"items": [{"a": 1, "b": {"c": [1, 2]}}, {"a": 2}, {"a": 3, "b": {"c": [3]}}]}
    run = store_outputs("custom", {}, outputs)
    readout = read_fields_detailed(run["execution_id"], ["items[0].b.c[5]", "items[1].b.c"])
    assert readout.errors["items[0].b.c[5]"] == "items[0].b.c[5]: index 5 is out of range: the list has 2 items."
    assert readout.errors["items[1].b.c"].endswith(
        "Other items have it: items[*].b.c finds 2. Did you mean items[*].b.c?"
    )
