"""examples/file_server.py over the wire: files under its root are served, and no way out of
the root reaches a file: path traversal with raw, percent-encoded or twice-encoded '..', either
slash, absolute paths and NUL bytes match no URI of the template, and symlinks leading out are
outside the root, all not found (-32002), as a missing file is; other bad paths (encoded
slashes, double encoding, bad UTF-8, directories) are refused with -32602 and a reason. The
secret files outside the root never appear on stdout."""

import base64
import os
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths and symlinks")

SERVER = str(ROOT / "examples" / "file_server.py")
SECRET = "TOP-SECRET-OUTSIDE-THE-ROOT"


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    base = tmp_path_factory.mktemp("files")
    root = base / "root"
    (root / "sub").mkdir(parents=True)
    (root / "hello.txt").write_text("hello, file")
    (root / "sub" / "nested.txt").write_text("nested file")
    (root / "with space.txt").write_text("spaced")
    (root / "a..b.txt").write_text("dots inside a name")
    (root / "ünï.txt").write_text("unicode name")
    (root / "bin.dat").write_bytes(b"\x00\xff\xfe binary")
    (base / "secret.txt").write_text(SECRET)
    (base / "outside").mkdir()
    (base / "outside" / "secret2.txt").write_text(SECRET + "-2")
    os.symlink("hello.txt", root / "link_inside")
    os.symlink("../secret.txt", root / "link_out")
    os.symlink(str(base / "outside"), root / "dir_out")
    os.symlink("../../secret.txt", root / "sub" / "link_up")
    os.symlink(str(base / "secret.txt"), root / "abs_link_out")
    os.symlink("sub", root / "dir_inside")
    return base


@pytest.fixture
def files(spawn, tree):
    wire = spawn(SERVER, env={"FILE_SERVER_ROOT": str(tree / "root")})
    wire.initialize()
    return wire


def read(wire, uri):
    return wire.request("resources/read", {"uri": uri})


def contents(reply):
    assert "result" in reply, reply
    [entry] = reply["result"]["contents"]
    return entry


# ============================================================================================
# What is served
# ============================================================================================

@pytest.mark.parametrize("uri, body", [
    ("file:///hello.txt", "hello, file"),
    ("file:///sub/nested.txt", "nested file"),
    ("file:///sub//nested.txt", "nested file"),
    ("file:///./hello.txt", "hello, file"),
    ("file:///with%20space.txt", "spaced"),
    ("file:///a..b.txt", "dots inside a name"),
    ("file:///%C3%BCn%C3%AF.txt", "unicode name"),
    ("file:///ünï.txt", "unicode name"),
    ("file:///link_inside", "hello, file"),
    ("file:///dir_inside/nested.txt", "nested file"),
])
def test_files_under_the_root_are_served(files, uri, body):
    entry = contents(read(files, uri))
    assert entry["uri"] == uri and entry["text"] == body, entry
    assert entry["mimeType"].startswith("text/"), entry


def test_binary_file_is_a_blob(files):
    entry = contents(read(files, "file:///bin.dat"))
    assert base64.b64decode(entry["blob"]) == b"\x00\xff\xfe binary"


def test_template_is_listed_and_list_files_shows_only_what_is_inside(files):
    templates = files.result("resources/templates/list")["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["file:///{+path}"]
    listed = files.result("tools/call", {"name": "list_files", "arguments": {}})["structuredContent"]["result"]
    assert "file:///hello.txt" in listed and "file:///with%20space.txt" in listed
    assert "file:///link_inside" in listed
    assert not any("link_out" in u or "dir_out" in u or "link_up" in u or "abs_link" in u for u in listed)
    for uri in listed:                                 # everything listed can be read
        assert "result" in read(files, uri), uri


def test_missing_file_is_resource_not_found(files):
    reply = read(files, "file:///no-such-file.txt")
    assert reply["error"]["code"] == -32002 and "not found" in reply["error"]["message"].lower()


def test_missing_file_is_32602_in_2026_07_28(spawn, tree):
    """The not-found error of each era, as the spec of each says."""
    wire = spawn(SERVER, env={"FILE_SERVER_ROOT": str(tree / "root")})
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    reply = wire.request("resources/read", {"uri": "file:///no-such-file.txt", "_meta": meta})
    assert reply["error"]["code"] == -32602 and "not found" in reply["error"]["message"].lower()


def test_uri_outside_the_template_is_resource_not_found(files):
    for uri in ("file://evil.example/etc/passwd", "http://example.com/hello.txt", "file:///"):
        assert read(files, uri)["error"]["code"] == -32002, uri


# ============================================================================================
# What is refused
# ============================================================================================

#: Ways out that match no URI of the template (mcp_min's own check): not found, -32002.
NOT_MATCHED = [
    "file:///../secret.txt",
    "file:///sub/../../secret.txt",
    "file:///./../secret.txt",
    "file:///sub/..",
    "file:///%2e%2e/secret.txt",
    "file:///%2E%2E/secret.txt",
    "file:///.%2e/secret.txt",
    "file:///%2e./secret.txt",
    "file:///sub/%2e%2e/%2e%2e/secret.txt",
    "file:///..%2fsecret.txt",
    "file:///%2e%2e%2fsecret.txt",
    "file:///%2E%2E%2Fsecret.txt",
    "file:///..%5csecret.txt",
    "file:///%2e%2e%5csecret.txt",
    "file:///..\\secret.txt",
    "file:///sub\\..\\..\\secret.txt",
    "file:///%252e%252e/secret.txt",                 # encoded twice
    "file:///%252e%252e%252fsecret.txt",
    "file:///..%255csecret.txt",
    "file:///sub%252f..%252f..%252fsecret.txt",
    "file:////etc/passwd",                           # absolute
    "file:///%2fetc/passwd",
    "file:///%5cetc/passwd",
    "file:///hello.txt%00.png",
    "file:///hello.txt%00",
    "file:///%00../secret.txt",
    "file:///sub%0a/../secret.txt",
]

#: Ways out that resolve outside the root, through a symlink (the example's containment
#: check): not found as well, -32002.
OUTSIDE = [
    "file:///link_out",
    "file:///abs_link_out",
    "file:///dir_out/secret2.txt",
    "file:///sub/link_up",
]

#: What the example refuses itself, with -32602 and a reason.
ATTACKS = [
    ("file:///%25252e%25252e/secret.txt", "twice"),
    ("file:///a%252fb", "twice"),
    ("file:///C:/Windows/win.ini", "absolute"),
    ("file:///%c0%ae%c0%ae/secret.txt", "UTF-8"),
    ("file:///%ff%fe", "UTF-8"),
    ("file:///a%2fb.txt", "encoded slash"),
    ("file:///a\\b.txt", "backslash"),
    ("file:///sub%0a.txt", "control"),
    ("file:///sub", "directory"),
    ("file:///dir_inside", "directory"),
]


@pytest.mark.parametrize("uri", NOT_MATCHED + OUTSIDE)
def test_ways_out_of_the_root_are_not_found(files, uri):
    reply = read(files, uri)
    assert "error" in reply, reply
    assert reply["error"]["code"] == -32002, reply
    assert reply["error"]["message"] == f"Resource not found: {uri}"
    assert SECRET not in str(reply)


@pytest.mark.parametrize("uri", NOT_MATCHED[:3] + NOT_MATCHED[-8:] + OUTSIDE[:1])
def test_ways_out_of_the_root_are_32602_not_found_in_2026_07_28(spawn, tree, uri):
    wire = spawn(SERVER, env={"FILE_SERVER_ROOT": str(tree / "root")})
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
    reply = wire.request("resources/read", {"uri": uri, "_meta": meta})
    assert reply["error"]["code"] == -32602 and reply["error"]["data"] == {"uri": uri}, reply
    assert reply["error"]["message"] == f"Resource not found: {uri}"
    assert SECRET not in str(reply)


@pytest.mark.parametrize("uri, reason", ATTACKS)
def test_other_bad_paths_are_refused_with_a_reason(files, uri, reason):
    reply = read(files, uri)
    assert "error" in reply, reply
    assert reply["error"]["code"] == -32602, reply
    message = reply["error"]["message"]
    assert reason.lower() in message.lower(), message
    assert uri in message                          # says which URI
    assert SECRET not in str(reply)


def test_absolute_path_of_the_secret_itself_is_not_found(files, tree):
    uri = "file:///" + str(tree / "secret.txt")          # file:////tmp/.../secret.txt
    reply = read(files, uri)
    assert reply["error"]["code"] == -32002 and SECRET not in str(reply)


def test_nothing_secret_ever_reaches_stdout(spawn, tree):
    """Every attack in one session, then the raw stdout: no line carries the secret."""
    wire = spawn(SERVER, env={"FILE_SERVER_ROOT": str(tree / "root")})
    wire.initialize()
    attacks = NOT_MATCHED + OUTSIDE + [uri for uri, _ in ATTACKS]
    for i, uri in enumerate(attacks):
        wire.send({"jsonrpc": "2.0", "id": i, "method": "resources/read", "params": {"uri": uri}})
    raw = [wire.recv_raw() for _ in attacks]
    assert not any(SECRET.encode() in line for line in raw)
    assert all(b'"error"' in line for line in raw)


def test_root_from_argv_and_the_default_root(spawn, tree):
    wire = spawn(SERVER, str(tree / "root"))
    wire.initialize()
    assert contents(read(wire, "file:///hello.txt"))["text"] == "hello, file"
    default = spawn(SERVER)                           # the examples folder
    default.initialize()
    assert "get_weather" in contents(read(default, "file:///weather.py"))["text"]
    assert read(default, "file:///../mcp_min.py")["error"]["code"] == -32002


def test_file_over_the_size_limit_is_refused(spawn, tmp_path):
    root = tmp_path / "big"
    root.mkdir()
    with open(root / "huge.bin", "wb") as f:
        f.truncate((10 << 20) + 1)                    # sparse: no real disk use
    wire = spawn(SERVER, env={"FILE_SERVER_ROOT": str(root)})
    wire.initialize()
    reply = read(wire, "file:///huge.bin")
    assert reply["error"]["code"] == -32602 and "larger than" in reply["error"]["message"]
