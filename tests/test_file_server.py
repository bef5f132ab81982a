"""examples/file_server.py over the wire: files under its root are served, and every way out
of the root is refused with -32602 and a reason (path traversal with raw or percent-encoded
'..', absolute paths, encoded slashes, double encoding, NUL bytes, bad UTF-8, symlinks leading
out); a missing file is -32002. The secret files outside the root never appear on stdout."""

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

ATTACKS = [
    ("file:///../secret.txt", "'..'"),
    ("file:///sub/../../secret.txt", "'..'"),
    ("file:///./../secret.txt", "'..'"),
    ("file:///sub/..", "'..'"),
    ("file:///%2e%2e/secret.txt", "'..'"),
    ("file:///%2E%2E/secret.txt", "'..'"),
    ("file:///.%2e/secret.txt", "'..'"),
    ("file:///%2e./secret.txt", "'..'"),
    ("file:///sub/%2e%2e/%2e%2e/secret.txt", "'..'"),
    ("file:///..%2fsecret.txt", "encoded slash"),
    ("file:///%2e%2e%2fsecret.txt", "encoded slash"),
    ("file:///%2E%2E%2Fsecret.txt", "encoded slash"),
    ("file:///..%5csecret.txt", "encoded slash"),
    ("file:///..\\secret.txt", "backslash"),
    ("file:///sub\\..\\..\\secret.txt", "backslash"),
    ("file:///%252e%252e/secret.txt", "twice"),
    ("file:///%252e%252e%252fsecret.txt", "twice"),
    ("file:///%25252e%25252e/secret.txt", "twice"),
    ("file:////etc/passwd", "absolute"),
    ("file:///%2fetc/passwd", "encoded slash"),
    ("file:///C:/Windows/win.ini", "absolute"),
    ("file:///hello.txt%00.png", "NUL"),
    ("file:///hello.txt%00", "NUL"),
    ("file:///%00../secret.txt", "NUL"),
    ("file:///sub%0a/../secret.txt", "control"),
    ("file:///%c0%ae%c0%ae/secret.txt", "UTF-8"),
    ("file:///%ff%fe", "UTF-8"),
    ("file:///link_out", "outside"),
    ("file:///abs_link_out", "outside"),
    ("file:///dir_out/secret2.txt", "outside"),
    ("file:///sub/link_up", "outside"),
    ("file:///sub", "directory"),
    ("file:///dir_inside", "directory"),
]


@pytest.mark.parametrize("uri, reason", ATTACKS)
def test_ways_out_of_the_root_are_refused_with_a_reason(files, uri, reason):
    reply = read(files, uri)
    assert "error" in reply, reply
    assert reply["error"]["code"] == -32602, reply
    message = reply["error"]["message"]
    assert reason.lower() in message.lower(), message
    assert uri in message                          # says which URI
    assert SECRET not in str(reply)


def test_absolute_path_of_the_secret_itself_is_refused(files, tree):
    uri = "file:///" + str(tree / "secret.txt")          # file:////tmp/.../secret.txt
    reply = read(files, uri)
    assert reply["error"]["code"] == -32602 and "absolute" in reply["error"]["message"]


def test_nothing_secret_ever_reaches_stdout(spawn, tree):
    """Every attack in one session, then the raw stdout: no line carries the secret."""
    wire = spawn(SERVER, env={"FILE_SERVER_ROOT": str(tree / "root")})
    wire.initialize()
    attacks = [uri for uri, _ in ATTACKS]
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
    assert read(default, "file:///../mcp_min.py")["error"]["code"] == -32602


def test_file_over_the_size_limit_is_refused(spawn, tmp_path):
    root = tmp_path / "big"
    root.mkdir()
    with open(root / "huge.bin", "wb") as f:
        f.truncate((10 << 20) + 1)                    # sparse: no real disk use
    wire = spawn(SERVER, env={"FILE_SERVER_ROOT": str(root)})
    wire.initialize()
    reply = read(wire, "file:///huge.bin")
    assert reply["error"]["code"] == -32602 and "larger than" in reply["error"]["message"]
