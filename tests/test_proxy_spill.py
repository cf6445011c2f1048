"""A server's large line kept in a temporary file and its tool result's text in a second one (issue 37,
mcp/proxy/spill.py): the client gets the very bytes it got when the line was held in memory, and the
files are gone afterwards. The thresholds are set low here, so that small messages take the file's way."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from pflow_structure.encoding.jsonio import list_items, list_items_in
from pflow_structure.mcp.proxy import shaping, spill, stdio
from pflow_structure.mcp.proxy.relay import Proxy
from pflow_structure.mcp.proxy.remote import Upstream
from pflow_structure.mcp.proxy.spill import SpilledLine, SpilledText, spilled_texts
from pflow_structure.mcp.proxy.stdio import TooLong, _Splitter
from pflow_structure.render.failure_log import read_failures
from pflow_structure.service import streaming
from pflow_structure.service.streaming import NotOneListError, capture_list_text, list_bounds
from pflow_structure.settings import Settings

ID = re.compile(rb"exec-\d+-[0-9a-f]+")
RECORDS = [{"n": n, "s": 'é "q" \\ \n\t\u2028 \U0001f600', "f": 1.5, "tags": [{"k": n % 3}]} for n in range(40)]
LIST_TEXT = json.dumps(RECORDS, indent=2)  # about 5,000 characters
LIST_PIECES = [' [1, {"a"', ": [2]}, 1", "23", ".5e", "1,", ' "x\\', 'u00e9"', "]\n", " "]


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines over 2,000 bytes go to a file, texts over 1,000 characters to a second one, read 64 bytes
    at a time (every escape and character is cut somewhere); counts past 1,000 characters estimated."""
    monkeypatch.setattr(spill, "SPILL_BYTES", 2000)
    monkeypatch.setattr(spill, "TEXT_IN_FILE_CHARS", 1000)
    monkeypatch.setattr(shaping, "EXACT_COUNT_CHARS", 1000)
    monkeypatch.setattr(spill, "PIECE", 64)
    monkeypatch.setattr(streaming, "STREAM_CHARS", 0)


def _answer_line(text: str, **result: Any) -> bytes:
    message = {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": text}], **result}}
    return json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _spilled(line: bytes) -> Any:
    held = SpilledLine()
    held.write(line)
    return spill.message_of(held, stdio.parse_float, stdio.decode)


def _open_spill_files() -> list[str]:
    """The files of this process open in the cache directory (a spilled file has no name left there)."""
    directory = str(Settings.from_env().cache_dir)
    links = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # the listing's own descriptor, closed by now
            links.append(os.readlink(f"/proc/self/fd/{fd}"))
    return [link for link in links if link.startswith(directory)]


def test_pieces_of_a_list_give_the_items_of_the_whole_text() -> None:
    text = "".join(LIST_PIECES)
    assert list(list_items_in(LIST_PIECES)) == [1, {"a": [2]}, 123.5e1, "xé"] == json.loads(text)
    for size in (1, 2, 5, 64):
        pieces = [LIST_TEXT[at : at + size] for at in range(0, len(LIST_TEXT), size)]
        assert list(list_items_in(pieces)) == RECORDS


@pytest.mark.parametrize("text", ["[1,]", "[1 2]", "[1]x", "[", "", "  ", '{"a": 1}', "[1]]", "[1.5e]", "[tru]"])
def test_a_text_that_is_not_one_list_fails_in_pieces_as_it_fails_whole(text: str) -> None:
    bounds = list_bounds(text)
    if bounds is not None:  # else the whole text's way does not start (service/streaming.py)
        with pytest.raises(ValueError):
            list(list_items(text, *bounds))
    with pytest.raises(ValueError, match="not a JSON list"):
        list(list_items_in(text[at : at + 1] for at in range(len(text))))


def test_a_line_over_the_spill_size_comes_out_as_a_file_holding_its_bytes() -> None:
    splitter = _Splitter(10_000, 100)
    line = b'{"id": 1, "result": "' + b"x" * 500 + b'"}'
    out = splitter.feed(b"{}\n" + line[:250]) + splitter.feed(line[250:] + b"\n[]")
    assert isinstance(out[1], SpilledLine)
    assert (out[0], out[1].read(), out[1].size) == (bytearray(b"{}"), line, len(line))
    assert splitter.rest() == [bytearray(b"[]")]


def test_a_spilled_line_over_the_limit_is_dropped_as_a_line_in_memory_is_and_its_file_closed() -> None:
    line = b'{"jsonrpc": "2.0", "id": 7, "result": "' + b"x" * 5000 + b'"}\n'
    spilling, holding = _Splitter(3000, 100), _Splitter(3000)
    spilling.feed(line[:1000])
    held = spilling.spilled
    assert held is not None
    dropped = spilling.feed(line[1000:])
    assert dropped == holding.feed(line) == [TooLong(len(line) - 1, 7, False)]
    assert held.file.closed


def test_a_spilled_answer_reads_back_as_the_message_of_the_line() -> None:
    texts = [LIST_TEXT, "lone \ud800 surrogate " * 80, "plain words\n" * 200]
    for text in texts:
        for ascii_only in (True, False):
            message = {"jsonrpc": "2.0", "id": 9, "result": {"content": [{"type": "text", "text": text}], "_meta": {}}}
            line = json.dumps(message, ensure_ascii=ascii_only, indent=1).encode("utf-8", "surrogatepass")
            line = line.replace(b'"_meta": {}', b'"_meta": {"price": 19.90}')  # a number as the server wrote it
            found = _spilled(line)
            assert isinstance(found["result"]["content"][0]["text"], SpilledText)
            assert stdio.encode(spill.plain_message(found)) == stdio.encode(stdio.decode(line))


@pytest.mark.parametrize(
    "line",
    [
        _answer_line(LIST_TEXT)[:-30],  # cut off
        _answer_line(LIST_TEXT) + b" trailing",
        _answer_line(LIST_TEXT).replace(b"\\n", b"\\q", 1),  # an escape JSON does not have
        b"\xff\xfe" + _answer_line(LIST_TEXT),
    ],
    ids=["truncated", "trailing", "bad escape", "not UTF-8"],
)
def test_a_malformed_spilled_line_is_no_message_as_in_memory_and_leaves_no_file(line: bytes) -> None:
    assert stdio.decode(line) is None
    assert _spilled(line) is None
    assert _open_spill_files() == []


def test_a_small_text_in_a_spilled_line_comes_back_a_string() -> None:
    line = _answer_line("short", structuredContent={"pad": "p" * 3000})
    assert _spilled(line) == stdio.decode(line)


def test_a_spilled_text_s_file_goes_when_its_message_is_dropped() -> None:
    found = _spilled(_answer_line(LIST_TEXT))
    assert len(_open_spill_files()) == 1
    del found
    gc.collect()
    assert _open_spill_files() == []


def _reader(data: bytes) -> Any:
    stream = io.BytesIO(data)

    async def read1(size: int) -> bytes:
        return stream.read1(size)

    return read1


async def _written(message: dict[str, Any]) -> bytes:
    """The bytes the proxy's stdio writer writes for ``message`` (a text in a file, a piece at a time)."""
    sink, source = anyio.create_memory_object_stream[Any](1)
    written: list[bytes] = []

    async def write(data: bytes) -> None:
        written.append(data)

    await sink.send(message)
    sink.close()
    await stdio._write_all(source, write)
    return b"".join(written)


async def _relayed(
    line: bytes, calls: int, arguments: dict[str, Any], want: str | None = None
) -> tuple[list[bytes], set[str]]:
    """What the client gets for ``line``, the server's answer to a tools/call, ``calls`` times over:
    the line read by the proxy's stdio reader, shaped by its relay, written by its encoder."""
    async with anyio.create_task_group() as group:
        proxy = Proxy(Upstream(command=("unused",)), Settings.from_env(), group)
        replies, kinds = [], set()
        for _ in range(calls):
            sink, source = anyio.create_memory_object_stream[Any](4)
            await stdio._lines(_reader(line + b"\n"), sink, limit=1 << 30)
            answer = await source.receive()
            source.close()
            kinds.add(type(answer["result"]["content"][0]["text"]).__name__)
            reply = await proxy._shaped_answer("tool", arguments, answer, want, None)
            held = len(spilled_texts(reply))  # a text passed on stays in its file until written
            assert _open_spill_files() == [] if held == 0 else len(_open_spill_files()) == held == 1
            replies.append(ID.sub(b"ID", await _written(reply)))
            assert _open_spill_files() == []  # while the message is still held
        group.cancel_scope.cancel()
    return replies, kinds


@pytest.mark.parametrize(
    ("line", "calls", "arguments", "want"),
    [
        (_answer_line(LIST_TEXT), 2, {}, None),  # cached item by item, then unchanged
        (_answer_line(LIST_TEXT[:-40]), 1, {}, None),  # broken JSON: passed on as it came
        (_answer_line(LIST_TEXT, isError=True), 1, {}, None),
        (_answer_line("a line of plain text\n" * 100), 1, {}, None),
        (_answer_line(LIST_TEXT.replace("1.5", "NaN")), 1, {}, None),  # an item the list's way declines
        (_answer_line(LIST_TEXT), 1, {}, "the n of each"),
        (_answer_line(LIST_TEXT[:-40] + "\ud800", isError=True), 1, {}, None),  # written as escaped ASCII
        (_answer_line(LIST_TEXT, isError=True, _meta={"cut": "\udc80"}), 1, {}, None),  # its envelope's surrogate
        (_answer_line("[1] A title, then prose\n" * 100), 1, {}, None),  # starts like JSON, is not: cached
        (_answer_line(json.dumps(list(range(1000)))[:-9]), 1, {}, None),  # numbers cut off: the whole way says
        (_answer_line(LIST_TEXT[:-40]), 2, {}, None),  # broken twice: no repeat is remembered
    ],
    ids=[
        "list",
        "broken",
        "error",
        "plain",
        "nan",
        "want",
        "error ascii",
        "envelope ascii",
        "prose",
        "numbers",
        "twice",
    ],
)
def test_the_client_gets_the_bytes_it_gets_when_the_line_is_held_in_memory(
    line: bytes, calls: int, arguments: dict[str, Any], want: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    spilled, in_file = anyio.run(_relayed, line, calls, arguments, want)
    assert _open_spill_files() == []
    monkeypatch.setattr(spill, "SPILL_BYTES", 1 << 30)
    held, in_memory = anyio.run(_relayed, line, calls, arguments, want)
    assert (in_file, in_memory) == ({"SpilledText"}, {"str"})
    assert spilled == held


def test_cache_dir_holds_no_spilled_file_by_name(tmp_path: Path) -> None:
    held = SpilledLine(str(tmp_path))
    held.write(b"x" * 10)
    assert (list(tmp_path.iterdir()), held.read()) == ([], b"x" * 10)
    held.close()


def test_a_number_as_the_server_wrote_it_stays_so_when_an_equal_one_is_dropped() -> None:
    line = b'{"jsonrpc": "2.0", "id": 1, "result": {"price": 19.90}}'
    first = stdio.decode(line)
    second = stdio.decode(line)
    del first
    gc.collect()
    assert stdio.encode(second or {}) == b'{"jsonrpc":"2.0","id":1,"result":{"price":19.90}}\n'


def test_the_failure_log_s_size_of_a_spilled_result_is_that_of_the_result_read_back() -> None:
    def json_bytes(value: Any) -> bytes:  # as relay.py writes a result's size to the failure log
        return json.dumps(value, default=repr, ensure_ascii=False).encode("utf-8", "replace")

    found = _spilled(_answer_line(LIST_TEXT + "\ud800", isError=False))
    size = spill.json_size(found["result"], json_bytes)
    assert size == len(json_bytes(spill.plain_result(found["result"]))) > len(LIST_TEXT)


class _FullDisk(io.BytesIO):
    """A temporary file on a disk that fills after ``room`` bytes."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.room = room

    def write(self, data: Any) -> int:
        if self.tell() + len(data) > self.room:
            raise OSError(28, "No space left on device")
        return super().write(data)


def test_a_line_whose_disk_fills_is_held_in_memory_and_read_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spill, "_temporary", lambda directory: _FullDisk(3000))
    line = _answer_line(LIST_TEXT)
    splitter = _Splitter(1 << 20, 100)
    (held,) = splitter.feed(line[:2500]) + splitter.feed(line[2500:] + b"\n")
    assert isinstance(held, SpilledLine) and type(held.file) is io.BytesIO and held.read() == line
    assert spill.message_of(held, stdio.parse_float, stdio.decode) == stdio.decode(line)  # its text: no room


def test_broken_json_in_a_file_is_found_by_its_item_scan_and_logged_so() -> None:
    line = _answer_line(LIST_TEXT[:-40])
    replies, _ = anyio.run(_relayed, line, 1, {})
    assert replies == [stdio.encode(stdio.decode(line) or {})]  # the server's message, as it came
    (record,) = read_failures(Settings.from_env().failure_log)
    assert record["error"] == (
        "MalformedJSONError: text starts like JSON but does not parse: its items, read in turn, break off before "
        "the list ends"
    )


def test_a_result_passed_on_from_its_file_is_written_a_piece_at_a_time() -> None:
    line = _answer_line(LIST_TEXT * 4, isError=True)  # about 20,000 characters, read 64 bytes at a time
    found = _spilled(line)
    pieces: list[bytes] = []

    async def write(data: bytes) -> None:
        pieces.append(data)

    async def main() -> None:
        sink, source = anyio.create_memory_object_stream[Any](1)
        await sink.send(found)
        sink.close()
        await stdio._write_all(source, write)

    anyio.run(main)
    assert b"".join(pieces) == stdio.encode(stdio.decode(line) or {})
    assert max(len(piece) for piece in pieces) < 400  # each piece of the file: 64 bytes escaped, or the envelope
    assert _open_spill_files() == []


def test_the_sdk_s_streams_get_a_text_in_a_file_read_back_and_its_file_closed() -> None:
    found = _spilled(_answer_line(LIST_TEXT, isError=True))

    async def main() -> Any:
        async with anyio.create_task_group() as group:
            proxy = Proxy(Upstream(command=("unused",)), Settings.from_env(), group)
            proxy.files_to_client, (proxy.to_client, received) = False, anyio.create_memory_object_stream[Any](1)
            await proxy.send_client(found)
            return await received.receive()

    assert anyio.run(main)["result"]["content"][0]["text"] == LIST_TEXT
    assert _open_spill_files() == []


@pytest.mark.parametrize("text", ["[1, 2", '[{"n": 1}, {"n": 2},]', "[1] A title"])
def test_a_strict_capture_says_when_the_items_break_off(text: str) -> None:
    settings = Settings.from_env()
    with pytest.raises(NotOneListError, match=r"^its items, read in turn, break off before the list ends$"):
        capture_list_text("mcp:tool", {}, text, settings=settings, strict=True)
    assert capture_list_text("mcp:tool", {}, text, settings=settings) is None
    assert settings.cache().scan() == []


@pytest.mark.parametrize(
    "text",
    ["a line of plain text\n" * 100, "\nblank lines\n\naround, no newline at the end " * 40, "lone \ud800 cut\n" * 80],
    ids=["lines", "blank lines", "surrogate"],
)
def test_a_long_plain_text_is_cached_line_by_line_as_its_lines_are_whole(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings.from_env()
    parsed: list[int] = []
    real_payload = shaping.payload

    def payload(result: dict[str, Any]) -> Any:
        parsed.append(1)
        return real_payload(result)

    def answer(result: dict[str, Any]) -> tuple[str, str, bytes, Any]:
        shaped = shaping.shape_and_store("tool", {}, result, settings=settings, budget=10, read_tool="read_fields")
        raw = (Path(settings.cache().location) / f"{shaped.execution_id}.json").read_bytes()
        text = ID.sub(b"ID", shaped.result["content"][0]["text"].encode()).decode()
        paths = settings.cache().get(str(shaped.execution_id)).text_paths
        return shaped.kind, text, raw[raw.index(b'"outputs":') :], paths

    monkeypatch.setattr(shaping, "payload", payload)
    in_file = answer(_spilled(_answer_line(text))["result"])
    in_memory = answer({"content": [{"type": "text", "text": text}]})
    assert parsed == []  # neither text was split whole
    monkeypatch.setattr(streaming, "STREAM_CHARS", len(text) + 1)  # now the whole way
    whole = answer({"content": [{"type": "text", "text": text}]})
    assert parsed == [1]
    assert in_file == in_memory == whole
    assert (in_file[0], in_file[3]) == ("cached", [["result"]])
    assert _open_spill_files() == []
