"""Hybrid replay: serve a recorded run's tool outputs to your agent in place of its real tools,
so a re-run changes only the model (seed 003's semi-deterministic replay, docs/evaluators.md).

    from trajhub.service.client.replay import RecordedTools

    recorded = RecordedTools.from_server("http://127.0.0.1:4318", trace_id, project="p")
    graph = create_react_agent(new_model, recorded.langchain_tools(my_tools))
    graph.invoke(...)                     # traced as usual, so the new run is ingested too
    print(recorded.unanswered)            # calls the recording could not answer

A call is answered by the recorded call of the same tool with the same arguments (compared by
the canonical hash trajhub computes: keys sorted, integral floats as integers), preferring the
same call id, then recording order. A recorded failure is raised again as `RecordedToolError`.
A call the recording has no answer for is listed in `unanswered` and raises
`UnrecordedToolCall` (your framework reports it as a tool error, as it would a real failure).

Imports no server code: only the HTTP client, and LangChain when you wrap LangChain tools.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from trajhub.records.arguments import arguments_hash
from trajhub.records.replay import ToolResultView
from trajhub.service.client.api import TrajhubClient


class RecordedToolError(Exception):
    """The recorded call failed; the message is the recorded error."""


class UnrecordedToolCall(LookupError):
    """The recording has no call of this tool with these arguments."""


@dataclass(frozen=True)
class UnansweredCall:
    tool_name: str
    arguments: Any
    arguments_hash: str
    call_id: str | None


@dataclass
class RecordedTools:
    """The tool results of one recorded run (`GET /api/v1/trajectories/{id}/tool-results`)."""

    results: list[ToolResultView]
    unanswered: list[UnansweredCall] = field(default_factory=list)
    answered: int = 0
    _used: set[int] = field(default_factory=set)

    @classmethod
    def from_server(cls, base_url: str, trace_id: str, project: str | None = None,
                    api_key: str | None = None, timeout: float = 30) -> RecordedTools:
        """The recording of `trace_id` on a running server (errors as TrajhubClient's)."""
        with TrajhubClient(base_url, project=project, api_key=api_key, timeout=timeout) as hub:
            return cls(hub.tool_results(trace_id).results)

    def _find(self, name: str, key: str, call_id: str | None) -> int | None:
        candidates = [i for i, r in enumerate(self.results)
                      if r.tool_name == name and r.arguments_hash == key]
        if not candidates:
            return None
        for i in candidates:
            if call_id is not None and self.results[i].call_id == call_id:
                return i
        fresh = [i for i in candidates if i not in self._used]
        # once each recording was served, a repeated call gets the last answer again
        return fresh[0] if fresh else candidates[-1]

    def answer(self, tool_name: str, arguments: Any, call_id: str | None = None) -> str:
        """The recorded output of this call; raises RecordedToolError for a recorded failure
        and UnrecordedToolCall when there is no recording of it."""
        key = arguments_hash(arguments)
        index = self._find(tool_name, key, call_id)
        if index is None:
            self.unanswered.append(UnansweredCall(tool_name, arguments, key, call_id))
            raise UnrecordedToolCall(
                f"no recorded call of {tool_name} with arguments {arguments!r} ({key})")
        self._used.add(index)
        self.answered += 1
        recorded = self.results[index]
        if recorded.error is not None:
            raise RecordedToolError(recorded.error.msg or "recorded tool error")
        return recorded.output

    def function(self, tool_name: str) -> Callable[..., str]:
        """A plain callable standing in for the tool `tool_name`: call it with the tool's
        keyword arguments."""
        def recorded_tool(**arguments: Any) -> str:
            return self.answer(tool_name, arguments)

        recorded_tool.__name__ = tool_name
        return recorded_tool

    def langchain_tools(self, tools: Iterable[Any]) -> list[Any]:
        """LangChain tools with the same names, descriptions and argument schemas as `tools`,
        answering from the recording."""
        from langchain_core.tools import StructuredTool

        return [StructuredTool.from_function(
                    func=self.function(t.name), name=t.name, description=t.description,
                    args_schema=t.args_schema)
                for t in tools]
