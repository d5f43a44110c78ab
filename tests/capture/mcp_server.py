"""The local MCP server of the `mcp_tools` shape: a FastMCP server on stdio with two tools,
started as a subprocess by langchain-mcp-adapters (`python -m tests.capture.mcp_server`).

`convert_currency` always fails: FastMCP answers its call with `isError`, and the adapter
returns that error text to the model instead of raising."""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP

from tests.capture import script

server = FastMCP("capture-tools", log_level="WARNING")  # no request log on stderr


@server.tool()
def get_weather(city: str) -> str:
    """Return the current weather for a city."""
    return script.TOKYO_RESULT if city == "Tokyo" else f"Sunny, 22C in {city}"


@server.tool()
def convert_currency(amount: float, currency: str) -> str:
    """Convert an amount of euros into another currency."""
    raise ValueError(script.CURRENCY_ERROR.split(": ", 1)[1])


if __name__ == "__main__":
    server.run("stdio")
