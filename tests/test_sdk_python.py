"""mcp_min servers driven by the official Python SDK client (``mcp``, pinned in
tests/requirements.txt), in both its handshake modes:

* ``auto``, the SDK's default: it probes ``server/discover`` (the 2026-era handshake) and
  falls back to ``initialize`` when the server answers with an error;
* ``legacy``: ``initialize`` at once.

The client runs in tests/clients/py_client.py (its step language: tests/clients/README.md);
the checks are in tests/sdk_suite.py, shared with the TypeScript client. Each run adds rows
to tests/compat_table.md (see tests/sdk_compat.py).
"""

import importlib.util

import pytest

pytest.register_assert_rewrite("sdk_compat", "sdk_suite")

if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("mcp_types") is None:
    pytest.skip("the official Python SDK (mcp) is not installed: bash tests/run.sh installs "
                "tests/requirements.txt into .venv", allow_module_level=True)

from sdk_compat import Driver  # noqa: E402
from sdk_suite import SdkClientTests, compat  # noqa: E402

pytest_plugins = ["sdk_compat"]
pytestmark = pytest.mark.sdk


@pytest.fixture(scope="module", params=["auto", "legacy"])
def sdk_client(request):
    return Driver("py", request.param)


class TestPythonClient(SdkClientTests):

    @compat("handshake")
    def test_handshake_mode_on_the_wire(self, sdk_client):
        """auto: server/discover (id 1) is answered -32601 at once, then initialize (id 2);
        legacy: initialize is the first message (id 1)."""
        run = sdk_client.scenario("features")
        sent, received = run.wire("send"), run.wire("recv")
        if sdk_client.mode == "auto":
            probe = sent[0]
            assert probe["method"] == "server/discover" and probe["id"] == 1
            assert probe["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
            assert received[0]["id"] == 1 and received[0]["error"]["code"] == -32601
            assert "result" not in received[0]
            assert sent[1]["method"] == "initialize" and sent[1]["id"] == 2
        else:
            assert sent[0]["method"] == "initialize" and sent[0]["id"] == 1
            assert all(m.get("method") != "server/discover" for m in sent)
        assert run.connected["handshake"] == "initialize" and run.connected["mode"] == sdk_client.mode
