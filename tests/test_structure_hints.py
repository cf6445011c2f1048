"""Value hints (structure/hints.py): each rule on its own, in the structure and in what want matches."""

from __future__ import annotations

from typing import Any

from pflow_structure.encoding import encode_value
from pflow_structure.filtering.want import want_scores
from pflow_structure.render.structure_text import describe_entry, tree_lines
from pflow_structure.structure import hints, infer_structure
from pflow_structure.structure.field_stats import Collector, FieldStats
from tests.contract import assert_structure_reads_back

TIMES = ("epoch", "epoch-named", "iso")


def _structure(outputs: Any) -> dict[str, dict[str, Any]]:
    encoded = encode_value(outputs)
    structure = infer_structure(encoded.value).structure
    assert_structure_reads_back(encoded.value, structure, encoded.binary_paths)
    return structure


def _stats(values: list[Any]) -> FieldStats:
    """The statistics of one list's items, as inference gathers them."""
    root = FieldStats()
    Collector(64, ()).observe(root, values, 0, None)
    assert root.items is not None
    return root.items


def test_epoch_seconds_under_a_name_that_says_little_show_unit_and_span_across_years() -> None:
    # GitHub's contributor stats: weeks[].w is the week's start in epoch seconds.
    weeks = [{"w": 1331424000, "c": 1}, {"w": 1514678400, "c": 0}]
    assert _structure({"weeks": weeks})["weeks[0].w"] == {"type": "int", "hint": "epoch s 2012..2017"}


def test_epoch_span_within_one_year_names_the_year_once() -> None:
    assert hints.value_hint(_stats([1614556800, 1615248000]), "w") == "epoch s 2021-03-01..03-09"


def test_one_epoch_value_is_one_day() -> None:
    assert hints.value_hint(_stats([1614556800]), "w") == "epoch s 2021-03-01"


def test_epoch_milliseconds_and_nanoseconds_are_told_apart_by_their_range() -> None:
    assert hints.value_hint(_stats([1614556800000, 1614556900000]), "t") == "epoch ms 2021-03-01"
    assert hints.value_hint(_stats([1614556800000000000]), "t") == "epoch ns 2021-03-01"


def test_epoch_digits_in_a_string_are_a_time_too() -> None:
    # Slack's message ids are epoch seconds with microseconds, as strings.
    stats = _stats(["1614556800.000200", "1614643200.000300"])
    assert hints.value_hint(stats, "ts", TIMES) == "epoch s 2021-03-01..03-02"


def test_mixed_units_are_no_time() -> None:
    assert hints.value_hint(_stats([1614556800, 1614556800000]), "t", ("epoch", "epoch-named")) == ""


def test_a_name_that_says_id_or_size_is_never_read_as_a_time() -> None:
    assert hints.value_hint(_stats([1614556800, 1614556801]), "id", TIMES) == ""
    assert hints.value_hint(_stats([1614556800, 1614556801]), "node_id", TIMES) == ""
    assert hints.value_hint(_stats([1614556800]), "size", TIMES) == ""


def test_a_count_below_2001_is_no_time() -> None:
    # GitHub's plan.space, 976,562,499 bytes, would read as 2000-12-11.
    assert hints.value_hint(_stats([976562499]), "space", TIMES) == ""


def test_a_time_whose_name_says_time_is_hinted_only_with_epoch_named() -> None:
    stats = _stats([1421539200])
    assert hints.names_a_time("created") is True
    assert hints.value_hint(stats, "created") == ""
    assert hints.value_hint(stats, "created", ("epoch-named",)) == "epoch s 2015-01-18"


def test_names_a_time_splits_snake_and_camel_case_words() -> None:
    assert [hints.names_a_time(key) for key in ("latest_event_ts", "lastSeen", "state", "format", "w")] == [
        True,
        True,
        False,
        False,
        False,
    ]


def test_iso_dates_show_their_span() -> None:
    stats = _stats(["2021-03-01T10:00:00Z", "2021-03-09T08:00:00Z", "2021-03-02"])
    assert hints.value_hint(stats, "created_at", ("iso",)) == "2021-03-01..03-09"


def test_a_few_repeating_strings_are_listed() -> None:
    assert hints.value_hint(_stats(["open", "closed", "open"]), "state", ("enum",)) == "closed|open"


def test_strings_that_never_repeat_or_are_one_constant_are_not_listed() -> None:
    assert hints.value_hint(_stats(["a", "b", "c"]), "state", ("enum",)) == ""
    assert hints.value_hint(_stats(["User", "User"]), "type", ("enum",)) == ""


def test_more_than_four_values_are_not_listed() -> None:
    values = ["a", "b", "c", "d", "e"] * 2
    assert hints.value_hint(_stats(values), "state", ("enum",)) == ""


def test_numbers_of_many_items_show_their_range() -> None:
    assert hints.value_hint(_stats([3, 0, 6]), "dow", ("range",)) == "0..6"
    assert hints.value_hint(_stats([0.25, 1.5]), "ratio", ("range",)) == "0.25..1.5"


def test_one_number_has_no_range() -> None:
    assert hints.value_hint(_stats([3]), "dow", ("range",)) == ""


def test_a_dynamic_key_dict_merges_its_times() -> None:
    # Keys that are data (dates) are summarised under [*]: the hint spans every value.
    days = {f"d{i}": 1614556800 + i * 86400 for i in range(10)}
    assert _structure({"days": days})["days[*]"]["hint"] == "epoch s 2021-03-01..03-10"


def test_the_tree_shows_the_hint_after_the_type() -> None:
    structure = {"weeks": {"type": "list", "length": 2}, "weeks[0].w": {"type": "int", "hint": "epoch s 2012..2017"}}
    assert tree_lines(structure) == ["  weeks list, 2 items", "    [0].w int epoch s 2012..2017"]


def test_a_hint_follows_the_average_length_so_the_text_reads_back() -> None:
    entry = {"type": "str", "avg_length": 17, "hint": "epoch s 2021-03-01"}
    assert describe_entry(entry, short=True) == "str ~17 epoch s 2021-03-01"
    assert describe_entry(entry) == "str, ~17 chars, epoch s 2021-03-01"


def test_want_meets_a_listed_value_at_the_strength_of_a_meaning() -> None:
    structure = {
        "items": {"type": "list", "length": 3},
        "items[0].st": {"type": "str", "hint": "closed|open"},
        "items[0].nm": {"type": "str", "avg_length": 9},
    }
    assert want_scores(structure, "which are open") == {"items[0].st": 0.6, "items[0].nm": 0.0}


def test_want_meets_an_epoch_hint_as_a_time() -> None:
    structure = {
        "weeks": {"type": "list", "length": 3},
        "weeks[0].w": {"type": "int", "hint": "epoch s 2012..2017"},
        "weeks[0].c": {"type": "int"},
    }
    assert want_scores(structure, "when")["weeks[0].w"] == 0.6
