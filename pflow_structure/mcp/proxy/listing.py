"""What the proxy knows of the server's tools: every page of its list, the names of our own tools
beside them, and the answers of ``describe_tools`` and ``search_tools`` (mixed into
:class:`~pflow_structure.mcp.proxy.relay.Proxy`).

The server's list is read whole when first needed (every page), and again after the server says it
changed (``notifications/tools/list_changed``): :attr:`Listing.catalog` is then None until the next
listing, so the light list, the search and the describe always follow the server's current tools.
Our tools keep their names unless the server has a tool of the same name (a gateway's too:
``read_fields`` is server ``read``'s tool ``fields`` under ``--separator _``); then ours take the prefix
``pflow_structure_`` (``pflow_structure_read_fields``), and a line on stderr says which and why.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import anyio

from pflow_structure.mcp.proxy.shaping import tool_schemas
from pflow_structure.mcp.proxy.toollist import DESCRIBE_TOOL, SEARCH_TOOL, proxied_tool
from pflow_structure.mcp.tools import (
    EDIT_TOOL,
    EDIT_TOOL_DESCRIPTION,
    EDIT_TOOL_SCHEMA,
    READ_TOOL,
    READ_TOOL_DESCRIPTION,
    READ_TOOL_SCHEMA,
)

if TYPE_CHECKING:
    from pflow_structure.mcp.proxy.downstream import Downstream
    from pflow_structure.settings import Settings

MAX_TOOL_PAGES = 100


class Listing:
    """The tool-list half of the proxy: its state is set by :meth:`start_listing`."""

    downstream: Downstream
    schemas: dict[str, Any]  # input schema by tool name, for arguments that hold references

    def start_listing(self, tools_mode: str) -> None:
        self.tools_mode = tools_mode  # full, compact or light (mcp/proxy/toollist.py)
        self.read_tool, self.edit_tool = READ_TOOL, EDIT_TOOL
        self.describe_tool, self.search_tool = DESCRIBE_TOOL, SEARCH_TOOL
        self.catalog: list[dict[str, Any]] | None = None  # every tool of the server, as it lists them
        self.names_known = False
        self.renamed_said: set[str] = set()  # our tools renamed for a server's of the same name, said on stderr
        self.listing_lock = anyio.Lock()

    def has_tools(self) -> bool:
        return "tools" in (self.downstream.init_result.get("capabilities") or {})

    async def list_pages(self) -> list[dict[str, Any]]:
        pages: list[dict[str, Any]] = []
        cursor = None
        for _ in range(MAX_TOOL_PAGES):
            answer = await self.downstream.request("tools/list", {"cursor": cursor} if cursor else None)
            if "error" in answer:
                break
            pages.append(answer["result"])
            cursor = answer["result"].get("nextCursor")
            if not cursor:
                break
        return pages

    async def choose_names(self) -> list[dict[str, Any]]:
        """``read_fields`` (and our other tools), or ``pflow_structure_read_fields`` when the server has
        a tool of that name; decided over every page of its tool list, when first needed. Returns the pages."""
        await self.downstream.session()  # a list change said while a gateway is still starting waits for it
        async with self.listing_lock:
            if self.names_known:
                return []
            pages = await self.list_pages() if self.has_tools() else []
            names = {tool.get("name") for page in pages for tool in page.get("tools", [])}
            for page in pages:
                self.schemas.update(tool_schemas(page))
            self.read_tool, self.edit_tool, self.describe_tool, self.search_tool = (
                ours if ours not in names else f"pflow_structure_{ours}"
                for ours in (READ_TOOL, EDIT_TOOL, DESCRIBE_TOOL, SEARCH_TOOL)
            )
            self.say_renamed([ours for ours in (READ_TOOL, EDIT_TOOL, DESCRIBE_TOOL, SEARCH_TOOL) if ours in names])
            self.catalog = [tool for page in pages for tool in page.get("tools", []) if isinstance(tool, dict)]
            self.names_known = True
            return pages

    def say_renamed(self, taken: list[str]) -> None:
        """One line on stderr (the client's log of the server) for each of our tools renamed since the
        last listing: which, why, and for a gateway how to keep both names."""
        said = self.renamed_said
        separator = getattr(self.downstream, "separator", None)  # a gateway's: SERVER{separator}TOOL
        for name in [name for name in taken if name not in said]:
            whose, keep = "a tool of the server behind", ""
            if separator is not None:
                namespaces = getattr(self.downstream, "servers", {})
                server = max((ns for ns in namespaces if name.startswith(ns + separator)), key=len, default="")
                tool = name[len(server) + len(separator) :]
                whose = f"server {server}'s tool {tool} under --separator {separator}"
                keep = "; choose --separator . or __ to keep both names"
            print(
                f"pflow-structure proxy: {name} is {whose}, so the proxy's own {name} is listed as "
                f"pflow_structure_{name}{keep}",
                file=sys.stderr,
            )
        self.renamed_said = set(taken)

    async def tool_catalog(self) -> list[dict[str, Any]]:
        """Every tool of the server, listed again after it said its list changed."""
        if self.catalog is None:
            self.names_known = False
            await self.choose_names()
        return self.catalog or []

    def ours(self) -> list[dict[str, Any]]:
        """``read_fields`` and ``edit_fields`` as listed, each with what its answers may hold for a client
        that reads a size declaration (``_meta``)."""
        from pflow_structure.service.clients import declared_size

        size = {"_meta": declared_size(self.session_settings())}
        return [
            {"name": self.read_tool, "description": READ_TOOL_DESCRIPTION, "inputSchema": READ_TOOL_SCHEMA} | size,
            {"name": self.edit_tool, "description": EDIT_TOOL_DESCRIPTION, "inputSchema": EDIT_TOOL_SCHEMA} | size,
        ]

    def session_settings(self) -> Settings:
        """The session's settings (the proxy's, chosen from the client's name at ``initialize``)."""
        raise NotImplementedError  # the proxy defines it

    async def discover(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The result of ``search_tools`` or ``describe_tools`` (``name``, as listed)."""
        from pflow_structure.mcp.proxy.toollist import describe_answer, our_tools, search_answer

        catalog = await self.tool_catalog()
        if name == self.search_tool:
            return search_answer(catalog, arguments, self.describe_tool)
        from pflow_structure.render.tokens import count_tokens
        from pflow_structure.service.clients import answer_counter

        ours = [*self.ours(), *our_tools(self.describe_tool, self.search_tool)]
        settings = self.session_settings()
        count = answer_counter(None, settings) or count_tokens  # Codex: its bytes and lines too
        tools = [*(proxied_tool(tool) for tool in catalog), *ours]
        return describe_answer(
            tools, arguments.get("names"), self.search_tool, lambda text: count(text) <= settings.answer_budget,
            self.describe_tool,
        )  # fmt: skip
