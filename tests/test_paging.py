"""The API's paging in the first lines of the view (structure/paging.py), one test per marker form.

Real responses where we have them: tests/corpus/ (SOURCES.md there) and tests/data/filter_eval/FAMILY/
(each family's SOURCES.md names the source and its licence). The forms no stored response carries are
written as the APIs document them, and say so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pflow_structure import Settings
from pflow_structure.render.structure_text import render_structure_text
from pflow_structure.service import store_outputs
from pflow_structure.structure.paging import paging_line

DATA = Path(__file__).parent / "data" / "filter_eval"
CORPUS = Path(__file__).parent / "corpus"


def _line(path: Path, params: dict[str, Any] | None = None) -> str:
    return paging_line({"result": json.loads(path.read_text(encoding="utf-8"))}, params)


# -- real responses ------------------------------------------------------------------------


def test_azure_next_link_is_cut_with_the_path_that_reads_it() -> None:
    assert _line(DATA / "azure" / "vms_list.json") == "more at result.nextLink"


def test_a_next_link_under_links_names_its_nested_path() -> None:
    assert _line(DATA / "datadog" / "security_signals_search.json") == "more at result.links.next"


def test_google_next_page_token_is_shown_whole_when_short() -> None:
    # its total sits in pageInfo, beside the list it counts (pageInfo.totalResults 13, 10 items)
    assert _line(DATA / "youtube" / "playlist_items_paged_1.json") == "nextPageToken=CAoQAA; 10 of 13"


def test_a_total_in_a_page_info_dict_counts_the_list_beside_it_not_its_own_absent_lists() -> None:
    assert paging_line({"items": [1, 2, 3], "meta": {"total": 9, "per_page": 3}}) == "3 of 9"
    assert paging_line({"items": [1, 2, 3], "paging": {"totalItems": 9}}) == "3 of 9"
    assert paging_line({"items": [1, 2, 3], "meta": {"total": 9}}) == ""  # a plain total only beside a paging key
    assert paging_line({"items": [1, 2, 3], "pageInfo": {"totalResults": 3}}) == ""  # the whole list is here
    assert paging_line({"pageInfo": {"totalResults": 13}}) == ""  # no list to count


def test_hubspot_has_more_flag() -> None:
    assert _line(DATA / "hubspot" / "lists.json") == "has-more=true"


def test_box_next_marker() -> None:
    assert _line(DATA / "box" / "sign_requests.json") == "next_marker=3000"


def test_github_total_count_larger_than_the_page() -> None:
    assert _line(DATA / "github" / "artifacts.json") == "30 of 592"


def test_zendesk_next_page_link_and_count() -> None:
    line = _line(DATA / "zendesk" / "tickets_list.json")
    assert line == "more at result.next_page; 50 of 6,040"


def test_aws_next_token() -> None:
    line = _line(CORPUS / "aws__securityhub_get_findings.json")
    assert line == "more at result.NextToken"


def test_graphql_has_next_page_false_and_its_end_cursor_say_nothing() -> None:
    assert _line(CORPUS / "github__graphql_compare_commits.json") == ""


def test_notion_has_more_false_says_nothing() -> None:
    assert _line(CORPUS / "notion__list_file_uploads.json") == ""


def test_a_total_that_is_money_is_no_count() -> None:
    # Stripe's invoice: "total": 2000 (cents) beside lists, and no paging key.
    assert _line(DATA / "stripe" / "invoice.json") == ""


def test_a_list_as_long_as_the_calls_per_page() -> None:
    issues = CORPUS / "github__list_issues.json"  # 100 issues, as asked with per_page=100
    assert _line(issues, {"per_page": "100"}) == "100 of more? (per_page=100)"
    assert _line(issues, {"per_page": "30"}) == ""


# -- forms no stored response carries, as the APIs document them ---------------------------


def test_slack_and_stripe_has_more_with_next_cursor() -> None:
    value = {
        "result": {"ok": True, "messages": [{}], "has_more": True, "response_metadata": {"next_cursor": "bmV4dA=="}}
    }
    assert paging_line(value) == "has_more=true, next_cursor=bmV4dA=="


def test_odata_next_link() -> None:
    value = {"result": {"value": [{}], "@odata.nextLink": "https://graph.microsoft.com/v1.0/users?$skiptoken=X"}}
    assert paging_line(value) == 'more at result["@odata.nextLink"]'


def test_graphql_has_next_page_true_with_end_cursor() -> None:
    value = {"result": {"data": {"issues": {"nodes": [{}], "pageInfo": {"hasNextPage": True, "endCursor": "Y3Vy"}}}}}
    assert paging_line(value) == "hasNextPage=true, endCursor=Y3Vy"


def test_kubernetes_continue_token() -> None:
    value = {"result": {"kind": "PodList", "metadata": {"continue": "eyJ2IjoibWV0YSJ9"}, "items": [{}]}}
    assert paging_line(value) == "continue=eyJ2IjoibWV0YSJ9"


def test_jira_is_last_false() -> None:
    value = {"result": {"startAt": 0, "maxResults": 50, "total": 120, "isLast": False, "values": [{}] * 50}}
    assert paging_line(value) == "isLast=false; 50 of 120"


def test_a_next_that_is_no_link_is_no_page() -> None:
    # npm's dist-tags: "next" is a version.
    assert paging_line({"result": {"dist-tags": {"latest": "5.0.0", "next": "3.0.0-beta.1"}}}) == ""


def test_an_items_next_is_not_the_pages() -> None:
    assert paging_line({"result": {"items": [{"next": "https://x/2", "has_more": True}]}}) == ""


# -- the line in the view, whatever the filter shows ---------------------------------------


def test_the_view_says_the_page_at_the_top_and_the_filter_cannot_hide_it(tmp_path: Path) -> None:
    value = json.loads((DATA / "intercom" / "contacts.json").read_text(encoding="utf-8"))
    result = store_outputs("read-json", {}, {"result": value}, settings=Settings(cache_dir=tmp_path))
    assert result["filtered"] is True
    assert "result.pages.next" not in result["structure"]
    assert result["page"] == "more at result.pages.next; 2 of 180"
    lines = render_structure_text(result).splitlines()
    assert lines[2] == "Page: more at result.pages.next; 2 of 180"


def test_the_calls_per_page_reaches_the_line(tmp_path: Path) -> None:
    value = json.loads((CORPUS / "github__list_issues.json").read_text(encoding="utf-8"))
    result = store_outputs(
        "mcp:list_issues", {"per_page": 100}, {"result": value}, settings=Settings(cache_dir=tmp_path)
    )
    assert result["page"] == "100 of more? (per_page=100)"


def test_no_marker_no_page_key(tmp_path: Path) -> None:
    result = store_outputs("read-json", {}, {"result": [1, 2]}, settings=Settings(cache_dir=tmp_path))
    assert "page" not in result


def test_the_proxys_cached_answer_starts_with_the_page() -> None:
    from pflow_structure.mcp.proxy.answer_text import cached_text

    described = {"execution_id": "exec-1763463202-0cd0c8fe", "structure": {}, "page": "has_more=true", "field_count": 0}
    assert cached_text(described, 9000, "result", "read_fields").splitlines()[0] == "Page: has_more=true"


def _shape_small(text: str, arguments: dict[str, Any], tmp_path: Path, cursor_argument: str = "") -> Any:
    from pflow_structure.mcp.proxy.shaping import shape_result
    from pflow_structure.render.auto import render_auto
    from pflow_structure.render.tokens import count_tokens

    def render(value: Any) -> tuple[str, str]:
        rendered = render_auto(value, operation="tool", failure_log=tmp_path / "fail.jsonl")
        return rendered.text, rendered.format

    def store(tool: str, args: dict[str, Any], value: Any) -> dict[str, Any]:
        raise AssertionError("small answers are not cached")

    result = {"content": [{"type": "text", "text": text}]}
    return shape_result(
        "tool",
        arguments,
        result,
        budget=1000,
        count=count_tokens,
        store=store,
        render=render,
        cursor_argument=cursor_argument,
    )


def test_a_small_answer_in_our_format_starts_with_the_page(tmp_path: Path) -> None:
    page = {"data": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bo"}], "has_more": True, "next_cursor": "c2"}
    shaped = _shape_small(json.dumps(page, indent=2), {}, tmp_path)
    assert shaped.kind == "formatted"
    assert shaped.result["content"][0]["text"].splitlines()[0] == "Page: has_more=true, next_cursor=c2"


def test_a_small_json_answer_stays_json_and_the_page_follows_it(tmp_path: Path) -> None:
    shaped = _shape_small('[{"id": 1, "price": 19.90}, {"id": 2, "price": 5.00}]', {"limit": 2}, tmp_path)
    assert shaped.kind == "compacted"
    assert [block["text"] for block in shaped.result["content"]] == [
        '[{"id":1,"price":19.90},{"id":2,"price":5.00}]',
        "Page: 2 of more? (limit=2)",
    ]


def test_the_cursor_argument_is_named_from_the_input_schema() -> None:
    from pflow_structure.structure.paging import cursor_argument

    schema = {"type": "object", "properties": {"channel": {"type": "string"}, "cursor": {"type": "string"}}}
    assert cursor_argument(schema) == "cursor"
    assert cursor_argument({"type": "object", "properties": {"start_cursor": {}}}) == "start_cursor"
    assert cursor_argument({"type": "object", "properties": {"query": {}}}) == ""


def test_a_small_answer_names_the_argument_that_takes_the_cursor(tmp_path: Path) -> None:
    page = {"data": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bo"}], "has_more": True, "next_cursor": "c2"}
    shaped = _shape_small(json.dumps(page, indent=2), {}, tmp_path, cursor_argument="cursor")
    first = shaped.result["content"][0]["text"].splitlines()[0]
    assert first == 'Page: has_more=true, next_cursor=c2; next page: cursor="c2"'


def test_a_cached_answer_passes_the_cursor_on_by_reference(tmp_path: Path) -> None:
    from pflow_structure.mcp.proxy.shaping import shape_and_store
    from pflow_structure.service.arguments import resolve_arguments

    value = json.loads((CORPUS / "aws__securityhub_get_findings.json").read_text(encoding="utf-8"))
    schema = {"type": "object", "properties": {"NextToken": {"type": "string"}}}
    result = {"content": [{"type": "text", "text": json.dumps(value)}]}
    settings = Settings(cache_dir=tmp_path)
    shaped = shape_and_store(
        "get_findings", {}, result, settings=settings, budget=1000, read_tool="read_fields", schema=schema
    )
    first = shaped.result["content"][0]["text"].splitlines()[0]
    reference = first.partition("next page: NextToken=")[2]
    assert first == f"Page: more at result.NextToken; next page: NextToken={reference}"
    resolved = resolve_arguments({"NextToken": reference}, schema=schema, settings=settings)
    assert resolved == {"NextToken": value["NextToken"]}
