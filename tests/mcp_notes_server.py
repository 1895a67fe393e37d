"""A tiny MCP server over stdio for tests (run as a script by ``McpWorkbench``):
``add_note(text)`` answers "noted: <text>"."""

from mcp.server.fastmcp import FastMCP

server = FastMCP("notes")


@server.tool()
def add_note(text: str) -> str:
    """Keep a note."""
    return f"noted: {text}"


if __name__ == "__main__":
    server.run("stdio")
