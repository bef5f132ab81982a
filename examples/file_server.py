"""Serve the files under one directory as resources, and nothing outside it.

    python3 examples/file_server.py [ROOT]        # or FILE_SERVER_ROOT=ROOT; default: examples/
    cd examples && FILE_SERVER_ROOT=ROOT granian --interface wsgi file_server:server

The resource template is file:///{+path}, with the path relative to ROOT: file:///notes/a.txt
is ROOT/notes/a.txt. A client (or a model choosing URIs) may send anything, so every path is
checked before a file is opened.

mcp_min itself matches no URI whose path has a ".." segment (raw, percent-encoded, or encoded
twice; either slash separating), begins with "/", or holds NUL: those are not found, and this
function never sees them. What is left is checked here. The path is resolved (symlinks
followed) and must still be under ROOT: one that leaves it, through a symlink to a file or
directory outside, is not found either, as if there were nothing there. These are refused
with -32602 and a message saying why:

- an absolute path the template lets through, a Windows drive (C:);
- an encoded slash or backslash (%2f, %5c) and any raw backslash: one segment may not become two;
- double encoding (%25252e: still a %XX after decoding once);
- NUL and other control characters, and percent-encodings that are not UTF-8;
- a directory, or a file over MAX_BYTES.

Not found is -32002 (in protocol 2026-07-28, -32602 with data.uri). The list_files tool shows
what there is to read.
"""

import os
import re
import sys
from urllib.parse import quote, unquote_to_bytes

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mcp_min import JSONRPCError, ResourceNotFound, Server, embedded_resource  # noqa: E402

INVALID_PARAMS = -32602            # JSON-RPC "Invalid params": a URI we refuse to serve
MAX_BYTES = 10 << 20               # the largest file served

HERE = os.path.dirname(os.path.abspath(__file__))
# The command line is this file's only when it runs as a script: served by an engine
# (granian, gunicorn) or by `mcp_min.py serve`, sys.argv is theirs.
ARGUMENTS = sys.argv[1:] if __name__ == "__main__" else []
ROOT = os.path.realpath(ARGUMENTS[0] if ARGUMENTS
                        else os.environ.get("FILE_SERVER_ROOT", HERE))

server = Server("file-server", "1.0.0", title="Files under one directory",
                instructions=f"Read files with resources/read on file:///<path relative to the root>; "
                             f"list them with the list_files tool.")


def refuse(uri, why):
    raise JSONRPCError(INVALID_PARAMS, f"Refused {uri}: {why}", {"uri": uri, "reason": why})


def inside_root(real):
    """Whether a resolved path is ROOT or under it."""
    return os.path.commonpath([ROOT, real]) == ROOT


def safe_path(uri, raw):
    """The real path of the file ``raw`` (the template's {+path}, still percent-encoded)
    names under ROOT; JSONRPCError for anything that could reach outside it."""
    if "\\" in raw:
        refuse(uri, "backslashes are not allowed in paths")
    if re.search(r"%(2f|5c)", raw, re.IGNORECASE):
        refuse(uri, "an encoded slash (%2F) or backslash (%5C) is not allowed")
    try:
        path = unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        refuse(uri, "the percent-encoded path is not valid UTF-8")
    if any(ord(c) < 0x20 or ord(c) == 0x7f for c in path):
        refuse(uri, "NUL and other control characters are not allowed in paths")
    if re.search(r"%[0-9a-fA-F]{2}", path):
        refuse(uri, "the path is percent-encoded twice")
    if path.startswith("/") or re.match(r"[A-Za-z]:", path):
        refuse(uri, "absolute paths are not allowed; give a path relative to the root")
    segments = path.split("/")
    if ".." in segments:               # mcp_min matches no such URI: in case it ever did
        refuse(uri, "'..' segments are not allowed")
    # Containment, whatever the checks above missed: the real path (symlinks resolved) must
    # be under ROOT. Outside it there is nothing to find, and nothing is said of what is.
    real = os.path.realpath(os.path.join(ROOT, *segments))
    if not inside_root(real) or not os.path.exists(real):
        raise ResourceNotFound(uri)    # -32002, or in 2026-07-28 -32602, as each era says
    if os.path.isdir(real):
        refuse(uri, "it is a directory; read the files in it (see the list_files tool)")
    if not os.path.isfile(real):
        refuse(uri, "not a regular file")
    if os.path.getsize(real) > MAX_BYTES:
        refuse(uri, f"the file is larger than {MAX_BYTES} bytes")
    return real


def read_bytes(real):
    """Open without following a symlink at the last step: `real` is already resolved, so a
    link that appears there after the check makes the open fail instead of escaping."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(real, flags)
    with os.fdopen(fd, "rb") as f:
        return f.read(MAX_BYTES + 1)[:MAX_BYTES]


@server.resource("file:///{+path}", name="file", description="A file under the served directory.")
def file(path: str):
    uri = f"file:///{path}"
    real = safe_path(uri, path)
    try:
        data = read_bytes(real)
    except OSError as e:
        refuse(uri, f"cannot be opened ({e.strerror})")
    import mimetypes
    mime = mimetypes.guess_type(real)[0]
    try:
        return embedded_resource(uri, text=data.decode("utf-8"), mime_type=mime or "text/plain")
    except UnicodeDecodeError:
        return embedded_resource(uri, blob=data, mime_type=mime or "application/octet-stream")


@server.tool(annotations={"readOnlyHint": True})
def list_files(limit: int = 200) -> list[str]:
    """The file:/// URIs of the files under the served directory (symlinks leading out of it
    are left out).

    Args:
        limit: the most URIs to return
    """
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(folder, name)
            real = os.path.realpath(full)
            if inside_root(real) and os.path.isfile(real):
                found.append("file:///" + quote(os.path.relpath(full, ROOT).replace(os.sep, "/")))
            if len(found) >= limit:
                return found
    return found


if __name__ == "__main__":
    server.run()
