"""The fixtures of the official MCP conformance suite, served by mcp_min.

The suite (@modelcontextprotocol/conformance 0.1.16, server side) connects once per scenario and
looks for tools, resources and prompts with fixed names. This server has all of them:

    bash ../shared/conformance/run.sh python3 tests/conformance_server.py     # from the repo root
    CONFORMANCE_SCENARIOS="ping tools-list" bash ../shared/conformance/run.sh ...   # some
    CONFORMANCE_INCLUDE_PENDING=1 bash ../shared/conformance/run.sh ...   # + json-schema-2020-12
    CONFORMANCE_OUT=/tmp/conf bash ../shared/conformance/run.sh ...       # keep checks.json

Each fixture is marked with the scenario that uses it. The values are the ones the scenario
descriptions give; the suite itself checks only some of them (see the comments).
Protocol methods the suite also exercises need no code here: initialize, ping,
logging/setLevel and resources/subscribe|unsubscribe are built into mcp_min.

Every tool returns content blocks (``Content`` or ``ToolResult``), so each result is exactly
the content the scenario describes, without the ``structuredContent`` a ``-> str`` annotation adds.
"""

import io
import json
import os
import struct
import sys
import time
import wave
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import mcp_min  # noqa: E402
from mcp_min import Content, Context, Server, ToolError, ToolResult  # noqa: E402

server = Server("mcp-min-conformance", version=mcp_min.__version__,
                title="mcp_min conformance fixtures",
                instructions="Fixtures for the MCP conformance suite; not a useful server.")


# ---------------------------------------------------------------------------------------------
# Media: a 1x1 red PNG and a short silent WAV, built with the standard library
# ---------------------------------------------------------------------------------------------

def png_1x1_red():
    """A 1x1 pixel, 8-bit RGB PNG whose pixel is pure red."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)     # width, height, depth, RGB, ...
    pixels = b"\x00" + b"\xff\x00\x00"                         # filter byte, then R G B
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(pixels)) + chunk(b"IEND", b""))


def wav_silence(samples=8, rate=8000):
    """A mono 16-bit PCM WAV of ``samples`` silent samples."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\x00\x00" * samples)
    return buffer.getvalue()


RED_PIXEL_PNG = png_1x1_red()
SILENT_WAV = wav_silence()


# ---------------------------------------------------------------------------------------------
# Tools
# ---------------------------------------------------------------------------------------------
# tools-list: every tool must have a non-empty description (here: the docstring's first line).

# tools-call-simple-text: a text block with non-empty text.
@server.tool
def test_simple_text() -> Content:
    """Tests simple text content response."""
    return mcp_min.text("This is a simple text response for testing.")


# tools-call-image: an image block with data and a mimeType.
@server.tool
def test_image_content() -> Content:
    """Tests image content response (a 1x1 red PNG)."""
    return mcp_min.image(data=RED_PIXEL_PNG, mime_type="image/png")


# tools-call-audio: an audio block; mimeType must be exactly "audio/wav".
@server.tool
def test_audio_content() -> Content:
    """Tests audio content response (a short silent WAV)."""
    return mcp_min.audio(data=SILENT_WAV, mime_type="audio/wav")


# tools-call-embedded-resource: a resource block with uri, mimeType and text.
@server.tool
def test_embedded_resource() -> Content:
    """Tests embedded resource content response."""
    return mcp_min.embedded_resource("test://embedded-resource", mime_type="text/plain",
                                     text="This is an embedded resource content.")


# tools-call-mixed-content: at least one text, one image and one resource block.
@server.tool
def test_multiple_content_types() -> ToolResult:
    """Tests response with multiple content types (text, image, resource)."""
    data = json.dumps({"test": "data", "value": 123}, separators=(",", ":"))
    return ToolResult([
        mcp_min.text("Multiple content types test:"),
        mcp_min.image(data=RED_PIXEL_PNG, mime_type="image/png"),
        mcp_min.embedded_resource("test://mixed-content-resource", mime_type="application/json",
                                  text=data),
    ])


# tools-call-with-logging: three info-level notifications/message, 50 ms apart, during the
# call. The scenario first sets the level to "debug", then counts at least 3 messages.
@server.tool
def test_tool_with_logging(ctx: Context) -> Content:
    """Tests a tool that sends log messages during execution."""
    ctx.info("Tool execution started")
    time.sleep(0.05)
    ctx.info("Tool processing data")
    time.sleep(0.05)
    ctx.info("Tool execution completed")
    return mcp_min.text("Tool with logging executed successfully")


# tools-call-with-progress: progress 0, 50 and 100 of 100, 50 ms apart, all before the
# result. The token is whatever the request's _meta.progressToken was (the suite's client
# sends the request id, an integer); report_progress sends nothing without one.
@server.tool
def test_tool_with_progress(ctx: Context) -> Content:
    """Tests a tool that reports progress notifications."""
    for step in (0, 50, 100):
        if step:
            time.sleep(0.05)
        ctx.report_progress(step, total=100, message=f"Completed step {step} of 100")
    return mcp_min.text("Tool with progress executed successfully")


# tools-call-error: the result must have isError: true and a text; ToolError gives both.
@server.tool
def test_error_handling() -> Content:
    """Tests error response handling: always fails."""
    raise ToolError("This tool intentionally returns an error for testing")


def _text_of(content):
    """The text of a sampling result's content (a block or, since 2025-11-25, a list)."""
    blocks = content if isinstance(content, list) else [content]
    return "".join(block.get("text", "") for block in blocks
                   if isinstance(block, dict) and block.get("type") == "text")


# tools-call-sampling: sampling/createMessage with one user message and maxTokens 100. The
# suite checks that the request reached its client and that the tool returned some content.
@server.tool
def test_sampling(prompt: str, ctx: Context) -> Content:
    """Tests server-initiated sampling (an LLM completion request to the client).

    Args:
        prompt: The prompt to send to the LLM
    """
    reply = ctx.sample(prompt, max_tokens=100)
    return mcp_min.text(f"LLM response: {_text_of(reply.get('content')) or 'No response'}")


# tools-call-elicitation: elicitation/create with the scenario's two-field form.
@server.tool
def test_elicitation(message: str, ctx: Context) -> Content:
    """Tests server-initiated elicitation (a request for user input).

    Args:
        message: The message to show the user
    """
    reply = ctx.elicit(message, {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    })
    return mcp_min.text(f"User response: action={reply.get('action')}, "
                        f"content={json.dumps(reply.get('content') or {})}")


# elicitation-sep1034-defaults (SEP-1034, 2025-11-25): a default for every primitive type.
# Checked exactly: name "John Doe" (string), age 30 (integer), score 95.5 (number),
# status "active" (string enum containing it), verified true (boolean).
SEP1034_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status",
                   "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}


@server.tool
def test_elicitation_sep1034_defaults(ctx: Context) -> Content:
    """Tests elicitation with default values for every primitive type (SEP-1034)."""
    reply = ctx.elicit("Please review and update the form fields with defaults", SEP1034_SCHEMA)
    return mcp_min.text(f"Elicitation completed: action={reply.get('action')}, "
                        f"content={json.dumps(reply.get('content') or {})}")


# elicitation-sep1330-enums (SEP-1330, 2025-11-25): the five enum shapes. Checked: untitled
# single (enum, no oneOf/enumNames), titled single (oneOf of const/title, no enum), legacy
# (enum + enumNames of equal length), untitled multi (array, items.enum, no items.anyOf),
# titled multi (array, items.anyOf of const/title, no items.enum).
SEP1330_SCHEMA = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string", "description": "Select one option",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string", "description": "Select one option with titles",
            "oneOf": [{"const": "value1", "title": "First Option"},
                      {"const": "value2", "title": "Second Option"},
                      {"const": "value3", "title": "Third Option"}],
        },
        "legacyEnum": {
            "type": "string", "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array", "description": "Select multiple options with titles",
            "minItems": 1, "maxItems": 3,
            "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"}]},
        },
    },
    "required": [],
}


@server.tool
def test_elicitation_sep1330_enums(ctx: Context) -> Content:
    """Tests elicitation with the enum schema variants of SEP-1330."""
    reply = ctx.elicit("Please select options from the enum fields", SEP1330_SCHEMA)
    return mcp_min.text(f"Elicitation completed: action={reply.get('action')}, "
                        f"content={json.dumps(reply.get('content') or {})}")


# json-schema-2020-12 (pending in the suite; SEP-1613): tools/list must keep $schema, $defs
# (with "address") and additionalProperties: false in the inputSchema as given.
JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        },
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
    },
    "additionalProperties": False,
}


@server.tool(input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(name: str | None = None, address: dict | None = None) -> Content:
    """Tool with JSON Schema 2020-12 features."""
    return mcp_min.text(f"JSON Schema 2020-12 tool called with: "
                        f"{json.dumps({'name': name, 'address': address})}")


# ---------------------------------------------------------------------------------------------
# Resources
# ---------------------------------------------------------------------------------------------
# resources-list: each resource needs a uri and a name.

# resources-read-text: contents[0] needs uri, mimeType and text.
@server.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text():
    """A static text resource for testing."""
    return "This is the content of the static text resource."


# resources-read-binary: contents[0] needs uri, mimeType and a base64 blob (bytes -> blob).
@server.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary():
    """A static binary resource (a PNG image) for testing."""
    return RED_PIXEL_PNG


# resources-subscribe, resources-unsubscribe: the URI the scenarios subscribe to.
@server.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource():
    """A resource clients can subscribe to."""
    return "Watched resource content"


# resources-templates-read: test://template/123/data must come back with "123" in its text.
@server.resource("test://template/{id}/data", name="template", mime_type="application/json")
def template_data(id: str):
    """A resource template with parameter substitution."""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"},
                      separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# Prompts
# ---------------------------------------------------------------------------------------------
# prompts-list: each prompt needs a non-empty description (the docstring's first line).

# prompts-get-simple: one user message.
@server.prompt
def test_simple_prompt():
    """A simple prompt without arguments."""
    return "This is a simple prompt for testing."


# prompts-get-with-args: the messages must contain both argument values.
@server.prompt
def test_prompt_with_arguments(arg1: str, arg2: str):
    """A prompt with required arguments.

    Args:
        arg1: First test argument
        arg2: Second test argument
    """
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


# prompts-get-embedded-resource: a message whose content is an embedded resource.
@server.prompt
def test_prompt_with_embedded_resource(resourceUri: str):  # noqa: N803 (the suite's name)
    """A prompt that includes an embedded resource.

    Args:
        resourceUri: URI of the resource to embed
    """
    return [
        mcp_min.embedded_resource(resourceUri, mime_type="text/plain",
                                  text="Embedded resource content for testing."),
        "Please process the embedded resource above.",
    ]


# prompts-get-with-image: a message whose content is an image with data and mimeType.
@server.prompt
def test_prompt_with_image():
    """A prompt that includes image content."""
    return [
        mcp_min.image(data=RED_PIXEL_PNG, mime_type="image/png"),
        "Please analyze the image above.",
    ]


# ---------------------------------------------------------------------------------------------
# Completion
# ---------------------------------------------------------------------------------------------
# completion-complete: completion/complete for argument arg1 of test_prompt_with_arguments
# (value "test"); any {"completion": {"values": [...]}} passes.
# NOTE: the completion registration API is not final. This uses the signature in mcp_min.py
# today, completion(argument, prompt=name) with fn(value, context_arguments) -> list of str
# (an earlier sketch had @server.completion(ref, argument)).
ARG1_SUGGESTIONS = ("testValue1", "testValue2", "paris", "park", "party")


@server.completion("arg1", prompt="test_prompt_with_arguments")
def complete_arg1(value, context_arguments):
    return [word for word in ARG1_SUGGESTIONS if word.startswith(value)]


if __name__ == "__main__":
    server.run()
