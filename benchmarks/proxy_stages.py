"""Issue 37.2: where the proxy's memory goes on one large tool result, stage by stage, in one process.

    python benchmarks/proxy_stages.py [RECORDS]      # default 490,000 records: about 103 MB of pretty JSON

The result is the text tests/servers/faulty_mcp_server.py's tool ``big`` answers, in the JSON-RPC line the
relay reads. Each stage starts from a fresh peak (``/proc/self/clear_refs``, Linux) and prints the process's
peak (VmHWM) and resident size (VmRSS) after it, in MB, and its seconds: the relay's decoding of the line
(mcp/proxy/stdio.py; where mcp/proxy/spill.py exists, the line written to a temporary file as the relay
writes it, then its envelope read and its text unescaped into a second file), then the shaping and caching
of the result (mcp/proxy/shaping.py ``shape_and_store``).
"""

from __future__ import annotations

import gc
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import large  # the records of the tool ``big``


def memory() -> tuple[int, int]:
    status = Path("/proc/self/status").read_text(encoding="ascii")
    peak = re.search(r"VmHWM:\s+(\d+) kB", status)
    rss = re.search(r"VmRSS:\s+(\d+) kB", status)
    assert peak is not None and rss is not None
    return int(peak.group(1)) // 1024, int(rss.group(1)) // 1024


def fresh_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5", encoding="ascii")


def main() -> None:
    import os

    os.environ.setdefault("PFLOW_STRUCTURE_CACHE_DIR", tempfile.mkdtemp(prefix="proxy-stages-"))
    from pflow_structure.mcp.proxy import shaping, stdio
    from pflow_structure.render.tokens import count_tokens
    from pflow_structure.settings import Settings

    count_tokens("")  # the proxy loads its vocabulary at start-up
    records = int(sys.argv[1]) if len(sys.argv) > 1 else large.PROXY_RECORDS
    text = json.dumps(large.records_like(records), indent=2)
    result = {"content": [{"type": "text", "text": text}], "isError": False}
    held = [bytearray((json.dumps({"jsonrpc": "2.0", "id": 2, "result": result}) + "\n").encode())]
    size = len(text)
    del text, result
    gc.collect()
    fresh_peak()
    print(f"text {size / 1e6:.0f} MB, line {len(held[0]) / 1e6:.0f} MB; before (peak, rss) MB: {memory()}")
    start = time.perf_counter()
    line = held.pop()
    if hasattr(stdio, "spill"):  # issue 37, third round: the line in a file, its text in a second one
        spilled = stdio.spill.SpilledLine()
        for at in range(0, len(line), stdio.CHUNK):
            spilled.write(line[at : at + stdio.CHUNK])
        del line
        message = stdio.spill.message_of(spilled, stdio.parse_float, stdio.decode)
    else:
        decoded = stdio.as_text(line) if hasattr(stdio, "as_text") else line
        del line
        message = stdio.decode(decoded)
        del decoded
    assert message is not None
    print(f"relay decodes the line: {memory()} in {time.perf_counter() - start:.2f} s")
    fresh_peak()
    start = time.perf_counter()
    settings = Settings.from_env()
    shaped = shaping.shape_and_store(
        "big", {"count": records}, message["result"], settings=settings, budget=1000, read_tool="read_fields"
    )
    print(f"shape_and_store ({shaped.kind}): {memory()} in {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
