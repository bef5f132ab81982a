"""mcp_min servers driven by the official Python SDK client (``mcp``, pinned in
tests/requirements.txt), in its three modes:

* ``auto``, the SDK's default: it probes ``server/discover`` and adopts 2026-07-28 when the
  server offers it (mcp_min does), else falls back to ``initialize``;
* ``2026-07-28``: no probe; every request carries the 2026-07-28 envelope from the first;
* ``legacy``: ``initialize`` at once.

The client runs in tests/clients/py_client.py (its step language: tests/clients/README.md);
the checks are in tests/sdk_suite.py, shared with the TypeScript client. Each run adds rows
to tests/compat_table.md (see tests/sdk_compat.py).
"""

import importlib.util

import pytest

if importlib.util.find_spec("mcp") is None or importlib.util.find_spec("mcp_types") is None:
    pytest.skip("the official Python SDK (mcp) is not installed: bash tests/run.sh installs "
                "tests/requirements.txt into .venv", allow_module_level=True)

from sdk_compat import Driver  # noqa: E402
from sdk_suite import SdkClientTests, compat  # noqa: E402

pytest_plugins = ["sdk_compat"]
pytestmark = pytest.mark.sdk


@pytest.fixture(scope="module", params=["auto", "2026-07-28", "legacy"])
def sdk_client(request):
    return Driver("py", request.param)


PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


class TestPythonClient(SdkClientTests):

    @compat("handshake")
    def test_handshake_mode_on_the_wire(self, sdk_client):
        """auto: server/discover (id 1) is answered with a DiscoverResult offering 2026-07-28,
        and no initialize follows; 2026-07-28: no probe, the first message is the first step's
        request, enveloped; legacy: initialize is the first message (id 1)."""
        run = sdk_client.scenario("features")
        sent, received = run.wire("send"), run.wire("recv")
        methods = [m.get("method") for m in sent]
        connected = run.connected
        assert connected["mode"] == sdk_client.mode
        if sdk_client.mode == "auto":
            probe = sent[0]
            assert probe["method"] == "server/discover" and probe["id"] == 1
            assert probe["params"]["_meta"][PROTOCOL_VERSION_KEY] == "2026-07-28"
            discovered = received[0]
            assert discovered["id"] == 1 and "error" not in discovered
            assert "2026-07-28" in discovered["result"]["supportedVersions"]
            assert discovered["result"]["resultType"] == "complete"
            assert sent[1]["method"] == "ping" and "initialize" not in methods
            assert (connected["handshake"], connected["protocolVersion"]) == ("discover",
                                                                              "2026-07-28")
        elif sdk_client.mode == "2026-07-28":
            first = sent[0]
            assert first["method"] == "ping" and first["id"] == 1     # the first step's
            assert first["params"]["_meta"][PROTOCOL_VERSION_KEY] == "2026-07-28"
            # The one server/discover is the suite's own step, after the first request.
            assert methods.count("server/discover") == 1 and methods.index("server/discover") > 0
            assert "initialize" not in methods
            # So the SDK knows nothing of the server but what its results say.
            assert (connected["handshake"], connected["protocolVersion"]) == ("none",
                                                                              "2026-07-28")
            assert connected["serverInfo"] is None and connected["capabilities"] == {}
        else:
            assert sent[0]["method"] == "initialize" and sent[0]["id"] == 1
            assert "server/discover" not in methods
            assert (connected["handshake"], connected["protocolVersion"]) == ("initialize",
                                                                              "2025-11-25")
