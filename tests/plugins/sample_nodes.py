"""Nodes a third-party package could register through the ``pflow_structure.nodes`` entry points."""

from __future__ import annotations

from typing import Any

from pocketflow import AsyncNode, Node


class ListNode(Node):  # type: ignore[misc]
    """Write a list of n records."""

    def exec(self, prep_res: Any) -> list[dict[str, Any]]:
        return [{"title": f"item {i}", "n": i} for i in range(int(self.params.get("n", 3)))]

    def post(self, shared: dict[str, Any], prep_res: Any, exec_res: Any) -> str:
        shared["result"] = exec_res
        return "default"


class FlakyNode(Node):  # type: ignore[misc]
    """Fail twice, then succeed (retries are honoured)."""

    def __init__(self) -> None:
        super().__init__(max_retries=3)
        self.calls = 0

    def exec(self, prep_res: Any) -> int:
        self.calls += 1
        if self.calls < 3:
            raise RuntimeError(f"attempt {self.calls} failed")
        return self.calls

    def post(self, shared: dict[str, Any], prep_res: Any, exec_res: Any) -> None:
        shared["attempts"] = exec_res


class AsyncEchoNode(AsyncNode):  # type: ignore[misc]
    """Echo the params back, asynchronously."""

    async def exec_async(self, prep_res: Any) -> dict[str, Any]:
        return dict(self.params)

    async def post_async(self, shared: dict[str, Any], prep_res: Any, exec_res: Any) -> None:
        shared["echo"] = exec_res


class ShadowNode(Node):  # type: ignore[misc]
    """Tries to replace the built-in read-json."""
