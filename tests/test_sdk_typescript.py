"""mcp_min servers driven by the official TypeScript SDK client
(``@modelcontextprotocol/sdk``, pinned in tests/clients/package.json and its lock file;
``bash tests/run.sh`` installs it into tests/clients/node_modules with ``npm ci``).

The client runs in tests/clients/ts_client.mjs (its step language: tests/clients/README.md);
the checks are in tests/sdk_suite.py, shared with the Python client. Each run adds rows to
tests/compat_table.md (see tests/sdk_compat.py).
"""

import pytest

from sdk_compat import Driver, typescript_missing  # noqa: E402

if (reason := typescript_missing()) is not None:
    pytest.skip(reason, allow_module_level=True)

from sdk_suite import SdkClientTests, compat  # noqa: E402

pytest_plugins = ["sdk_compat"]
pytestmark = pytest.mark.sdk


@pytest.fixture(scope="module")
def sdk_client():
    return Driver("ts", "legacy")


class TestTypeScriptClient(SdkClientTests):

    @compat("handshake")
    def test_handshake_on_the_wire(self, sdk_client):
        """The TypeScript client has one handshake: initialize with id 0 (an id mcp_min must
        treat like any other), then notifications/initialized."""
        run = sdk_client.scenario("features")
        sent, received = run.wire("send"), run.wire("recv")
        assert sent[0]["method"] == "initialize" and sent[0]["id"] == 0
        assert received[0]["id"] == 0 and "result" in received[0]
        assert sent[1] == {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert all(m.get("method") != "server/discover" for m in sent)


