"""A server for tests/test_results.py: bad arguments and the isError texts they produce,
output schemas per return type, every content helper, tool/resource/prompt metadata."""

import dataclasses
import datetime
import os
import sys
from typing import Literal, Optional, TypedDict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from mcp_min import (Content, Server, ToolError, ToolResult, audio, embedded_resource,  # noqa: E402
                     image, resource_link, text)

server = Server("results", "1.0.0")

# --- sample media: just the magic bytes each format starts with, plus a tail ---------------------

MEDIA = {
    "png": b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR",
    "jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00",
    "gif87": b"GIF87a\x01\x00\x01\x00",
    "gif89": b"GIF89a\x01\x00\x01\x00",
    "webp": b"RIFF\x24\x00\x00\x00WEBPVP8 ",
    "wav": b"RIFF\x24\x00\x00\x00WAVEfmt ",
    "mp3-id3": b"ID3\x03\x00\x00\x00\x00\x00\x21",
    "mp3-frame": b"\xff\xfb\x90\x64\x00\x00",
    "ogg": b"OggS\x00\x02\x00\x00\x00\x00",
    "flac": b"fLaC\x00\x00\x00\x22",
    "unknown": b"\x00\x01\x02\x03 no magic here",
}

# --- argument validation ---------------------------------------------------------------------


class Guest(TypedDict):
    name: str
    age: int


@dataclasses.dataclass
class Venue:
    city: str
    capacity: int

    def __post_init__(self):
        if self.capacity <= 0:
            raise ValueError("capacity must be positive")


@server.tool
def plan_party(budget: float, occasion: Literal["birthday", "wedding"], guests: list[Guest],
               venue: Venue, note: str = "") -> str:
    """Plan a party."""
    return f"{occasion} for {len(guests)} in {venue.city} at {budget}"


@server.tool
def count_to(n: int) -> str:
    """Report the type and value the function received."""
    return f"{type(n).__name__} {n!r}"


@server.tool
def scale(x: float) -> str:
    """Report the type and value the function received."""
    return f"{type(x).__name__} {x!r}"


class Options(TypedDict):
    verbose: bool


@server.tool
def take_json(items: list[int], options: Options, maybe: Optional[list[str]] = None) -> str:
    """Report the Python types of the arguments received."""
    return (f"items={type(items).__name__}{items!r} options={type(options).__name__}{options!r} "
            f"maybe={maybe!r}")


@server.tool
def on_day(day: datetime.date) -> str:
    """Report the date received."""
    return f"{type(day).__name__} {day.isoformat()}"


@server.tool
def keep_text(raw: str) -> str:
    """A str parameter receives JSON-looking text unparsed."""
    return f"{type(raw).__name__} {raw}"


# --- failures ----------------------------------------------------------------------------------


class QuotaExceeded(Exception):
    pass


@server.tool
def explode(kind: str) -> str:
    """Fail in the way asked."""
    if kind == "tool":
        raise ToolError("The budget must be more than $0.")
    if kind == "tool-multiline":
        raise ToolError("Two problems:\n- one\n- two")
    if kind == "value":
        raise ValueError("bad value 42")
    if kind == "key":
        return {}["missing"]
    if kind == "custom":
        raise QuotaExceeded("daily quota of 100 calls used up")
    if kind == "zero":
        return str(1 / 0)
    if kind == "unserializable":
        return {"when": object()}
    if kind == "no-mime":
        return image(MEDIA["unknown"])
    return "fine"


# --- output schemas ----------------------------------------------------------------------------


class Person(TypedDict):
    name: str
    age: int


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


@server.tool
def out_typeddict() -> Person:
    return {"name": "Ada", "age": 36}


@server.tool
def out_dataclass() -> Point:
    return Point(3, 4)


@server.tool
def out_mapping() -> dict[str, int]:
    return {"a": 1, "b": 2}


@server.tool
def out_list() -> list[Person]:
    return [{"name": "Ada", "age": 36}, {"name": "Bob", "age": 7}]


@server.tool
def out_int() -> int:
    return 42


@server.tool
def out_optional(empty: bool = False) -> Optional[int]:
    return None if empty else 7


@server.tool
def out_str() -> str:
    return "just text"


@server.tool
def out_str_json_looking() -> str:
    return '{"a": 1}'


@server.tool
def out_unicode() -> dict[str, str]:
    return {"greeting": "héllo wörld ✓"}


@server.tool
def out_content() -> Content:
    return text("a block")


@server.tool
def out_content_list() -> list[Content]:
    return [text("one"), text("two")]


@server.tool
def out_tool_result() -> ToolResult:
    return ToolResult("via ToolResult")


@server.tool(structured=False)
def out_unstructured() -> Person:
    return {"name": "Ada", "age": 36}


@server.tool
def out_unannotated_dict():
    return {"k": [1, 2]}


@server.tool
def out_unannotated_list():
    return [1, "two"]


@server.tool
def out_none() -> None:
    return None


@server.tool
def bad_int() -> int:
    return "x"


@server.tool
def bad_typeddict() -> Person:
    return {"name": "Ada"}


@server.tool
def bad_list() -> list[int]:
    return [1, "two", 3]


@server.tool
def bad_bool_for_int() -> int:
    return True


DECLARED = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@server.tool(output_schema=DECLARED)
def declared_ok():
    return {"n": 5}


@server.tool(output_schema=DECLARED)
def declared_bad():
    return {"n": "five"}


@server.tool(output_schema=DECLARED)
def declared_tool_result_bad() -> ToolResult:
    return ToolResult("five", structured={"n": "five"})


@server.tool(output_schema=DECLARED)
def declared_tool_result_unstructured() -> ToolResult:
    return ToolResult("five")


@server.tool(output_schema=DECLARED)
def declared_content_only():
    return text("five")


@server.tool
def tool_result_dataclass() -> ToolResult:
    return ToolResult("a point", structured=Point(1, 2))


# --- content helpers ---------------------------------------------------------------------------


@server.tool
def img(kind: str) -> Content:
    """An image block from in-memory bytes."""
    return image(MEDIA[kind])


@server.tool
def img_b64(data: str) -> Content:
    """An image block from base64 text."""
    return image(data)


@server.tool
def img_file(path: str) -> Content:
    """An image block from a file."""
    return image(path=path)


@server.tool
def snd(kind: str) -> Content:
    """An audio block from in-memory bytes."""
    return audio(MEDIA[kind])


@server.tool
def snd_file(path: str) -> Content:
    """An audio block from a file."""
    return audio(path=path)


@server.tool
def img_explicit() -> Content:
    return image(MEDIA["unknown"], mime_type="image/x-custom")


ANNOTATIONS = {"audience": ["user", "assistant"], "priority": 0.5,
               "lastModified": "2025-01-12T15:00:58Z"}


@server.tool
def annotated_text() -> Content:
    return text("hello", annotations=ANNOTATIONS, meta={"example.com/trace": "t-1"})


@server.tool
def link() -> Content:
    return resource_link("test://data/config.json", "config", title="Config file",
                         description="The configuration", mime_type="application/json", size=123,
                         annotations={"audience": ["assistant"]},
                         icons=[{"src": "https://example.com/i.png", "mimeType": "image/png"}],
                         meta={"example.com/k": 1})


@server.tool
def link_minimal() -> Content:
    return resource_link("test://data/notes.txt")


@server.tool
def embedded_text() -> Content:
    return embedded_resource("test://data/notes.txt", text="remember the milk")


@server.tool
def embedded_typed() -> Content:
    return embedded_resource("test://x/page", text="# Title", mime_type="text/markdown",
                             annotations={"priority": 1}, meta={"example.com/k": "v"})


@server.tool
def embedded_blob() -> Content:
    return embedded_resource("test://img/logo.png", blob=MEDIA["png"], mime_type="image/png")


@server.tool
def embedded_blob_default() -> Content:
    return embedded_resource("test://bin/data", blob=b"\x00\x01\x02")


@server.tool
def blocks() -> list[Content]:
    return [text("first"), image(MEDIA["png"]), audio(MEDIA["wav"]),
            resource_link("test://data/notes.txt", "notes"),
            embedded_resource("test://data/notes.txt", text="milk")]


@server.tool
def mixed() -> ToolResult:
    return ToolResult(["plain string", text("a block"), image(MEDIA["gif89"])],
                      structured={"total": 3}, meta={"example.com/took_ms": 5})


@server.tool
def mixed_error() -> ToolResult:
    return ToolResult("it went wrong, gently", is_error=True)


@server.tool
def zoo() -> ToolResult:
    """Every kind of block, with annotations and _meta, plus structured data (version shaping)."""
    return ToolResult([
        text("t", annotations=ANNOTATIONS, meta={"example.com/k": 1}),
        image(MEDIA["png"], annotations={"priority": 0.2}),
        audio(MEDIA["wav"], meta={"example.com/k": 2}),
        resource_link("test://data/notes.txt", "notes", title="Notes",
                      icons=[{"src": "https://example.com/n.png"}]),
        embedded_resource("test://data/notes.txt", text="milk",
                          annotations={"lastModified": "2025-01-12T15:00:58Z", "priority": 1}),
    ], structured={"n": 5})


@server.tool
def structured_point() -> Point:
    return Point(1, 2)


# --- tool metadata -----------------------------------------------------------------------------

ICONS = [{"src": "https://example.com/icon.png", "mimeType": "image/png", "sizes": ["48x48"]},
         {"src": "data:image/svg+xml;base64,PHN2Zy8+", "theme": "dark"}]
TOOL_ANNOTATIONS = {"title": "Delete a file", "readOnlyHint": False, "destructiveHint": True,
                    "idempotentHint": True, "openWorldHint": False}


@server.tool(name="files.delete-v2_final", title="Delete file", annotations=TOOL_ANNOTATIONS,
             icons=ICONS, meta={"example.com/owner": "fs-team"}, description="Delete one file.")
def delete_file(path: str) -> str:
    """Not this docstring: description= wins."""
    return f"deleted {path}"


@server.tool
def plain(a: int) -> str:
    """A tool with no metadata at all.

    Args:
        a: a number
    """
    return str(a)


# --- resources ---------------------------------------------------------------------------------


@server.resource("test://docs/readme", title="Read me", size=42,
                 annotations={"audience": ["user"], "priority": 0.9})
def readme() -> str:
    """The project's read-me.

    More detail that is not part of the description.
    """
    return "Read me first."


@server.resource("test://data/config.json")
def config() -> dict:
    """Configuration as JSON."""
    return {"debug": True, "level": 3}


@server.resource("test://data/notes.txt")
def notes() -> str:
    return "remember the milk"


@server.resource("test://img/logo.png")
def logo() -> bytes:
    return MEDIA["png"]


@server.resource("test://data/blob")
def raw_blob() -> bytes:
    return b"\x00\xff"


@server.resource("test://data/state")
def state() -> dict:
    return {"ok": True}


@server.resource("test://data/text-block")
def text_block_resource():
    return text("a text block is not a resource's contents")


@server.resource("test://data/list")
def listing() -> list:
    return [1, 2]


@server.resource("test://data/page", mime_type="text/markdown", description="Explicit description")
def page() -> str:
    """Docstring that loses to description=."""
    return "# Page"


@server.resource("test://meta/full", title="Full", icons=ICONS, meta={"example.com/k": "v"},
                 annotations={"audience": ["assistant"], "lastModified": "2025-01-12T15:00:58Z"})
def full() -> str:
    return "full"


@server.resource("test://users/{user_id}/profile", title="User profile")
def profile(user_id: str) -> dict:
    """A user's profile."""
    return {"user_id": user_id}


@server.resource("test://files/{+path}", mime_type="text/plain")
def file_at(path: str) -> str:
    """Any file under the root."""
    return f"path={path}"


@server.resource("test://items/{n}")
def item(n: int) -> str:
    """An item by number."""
    return f"{type(n).__name__} {n!r}"


@server.resource("test://exports/{name}.csv")
def export(name: str) -> str:
    """A CSV export."""
    return "a,b\n1,2\n"


@server.resource("test://pictures/{name}")
def picture(name: str) -> bytes:
    return MEDIA["gif89"]


# --- prompts -----------------------------------------------------------------------------------


@server.prompt(title="Card writer")
def congrats(recipient: str, tone: str = "warm") -> str:
    """Write a congratulations card.

    Args:
        recipient: who the card is for
        tone: how it should sound,
            for example warm or formal
    """
    return f"Write a {tone} note for {recipient}."


@server.prompt
def review(code: str, language: str = "python", strict: bool = False) -> list:
    """Review some code.

    :param code: the code to review
    :param str language: its language
    """
    return [f"Review this {language} code (strict={strict!r}):\n{code}",
            {"role": "assistant", "content": "Sure, let me look."}]


@server.prompt
def repeat(times: int) -> str:
    """Repeat something."""
    return f"{type(times).__name__} {times!r}"


@server.prompt
def undocumented(x: str) -> str:
    return x


@server.prompt(name="rich", title="Rich", description="Every block kind", icons=ICONS,
               meta={"example.com/k": "v"})
def rich_prompt() -> list:
    return [text("t", annotations=ANNOTATIONS, meta={"example.com/k": 1}),
            image(MEDIA["png"]),
            audio(MEDIA["wav"]),
            resource_link("test://data/notes.txt", "notes"),
            embedded_resource("test://data/notes.txt", text="milk")]


if __name__ == "__main__":
    server.run()
