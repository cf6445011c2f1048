"""The application service: what every adapter calls."""

from __future__ import annotations

import pytest

from pflow_structure import ParameterError, read_fields, store_outputs
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


def test_an_int_too_long_for_json_text_is_kept_as_hex() -> None:
    run = store_outputs("custom", {}, {"big": 10**5000, "small": 5})
    assert run["warnings"] == ["big: an int of 16610 bits is stored as hex text"]
    value = read_fields(run["execution_id"], ["big"])["big"]
    assert int(value, 16) == 10**5000
