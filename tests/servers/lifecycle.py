"""A server for the lifecycle tests (tests/test_lifecycle.py): every field whose presence
depends on the negotiated protocol version — titles, icons, tool annotations, output schemas,
structured content, resource links, audio, and the richer serverInfo of 2025-11-25."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from mcp_min import Server, audio, resource_link, text  # noqa: E402

ICONS = [{"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]}]

server = Server("lifecycle", "2.0.0", title="Lifecycle Server", description="Shapes by version.",
                website_url="https://example.com/lifecycle", icons=ICONS,
                instructions="Call link to get a resource link.")


@server.tool(title="Link Maker", icons=ICONS,
             annotations={"title": "Link Maker", "readOnlyHint": True, "openWorldHint": False})
def link():
    """Return a resource_link block (2025-06-18+) with a title and icons (2025-11-25+)."""
    return resource_link("test://doc", "doc", title="The Doc", description="A document.",
                         mime_type="text/plain", icons=ICONS)


@server.tool
def data() -> dict:
    """Structured output (2025-06-18+) with an outputSchema."""
    return {"answer": 42, "unit": "none"}


@server.tool
def sound():
    """An audio block (2025-03-26+)."""
    return audio(b"RIFF\x24\x00\x00\x00WAVEfmt ", mime_type="audio/wav")


@server.tool
def plain() -> str:
    """Plain text, no title, no icons, no annotations."""
    return "plain"


@server.resource("test://doc", title="The Doc", icons=ICONS, mime_type="text/plain",
                 description="A document.")
def doc() -> str:
    return "the doc"


@server.resource("test://docs/{name}", title="Any Doc", icons=ICONS, description="Docs by name.")
def any_doc(name: str) -> str:
    return f"doc {name}"


@server.prompt(title="Read The Doc", icons=ICONS)
def read_doc(topic: str) -> list:
    """Ask about the doc, linking it."""
    return [text(f"Tell me about {topic}."), resource_link("test://doc", "doc", title="The Doc")]


if __name__ == "__main__":
    server.run()
