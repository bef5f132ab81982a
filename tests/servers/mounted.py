"""Every example that defines a Server (examples/*.py, but those of NOT_MOUNTED) and
tests/conformance_server.py in one WSGI application, each mounted under its name:
examples/weather.py at /weather/mcp, the conformance server at /conformance/mcp. For
serving them all from one engine process (tests/test_granian.py):

    granian --interface wsgi --working-dir tests/servers mounted:application

Each is the example's own `server`, called as the WSGI application it is, with the
mount point moved from PATH_INFO to SCRIPT_NAME as the WSGI convention has it.
"""

import importlib.util
import json
import re
from pathlib import Path
from wsgiref.util import shift_path_info

ROOT = Path(__file__).resolve().parent.parent.parent


def load(path):
    """The `server` of the Python file at `path`, imported as a module of its own."""
    spec = importlib.util.spec_from_file_location(f"mounted_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.server


#: Examples that need services besides the engine: scale_out_server.py needs redis-py, a
#: Redis and a database shared by its processes (tests/test_scale_out.py runs it so).
NOT_MOUNTED = {"scale_out_server"}


def defines_a_server(path):
    """Whether the example builds an mcp_min Server (naive_server.py, written without
    mcp_min, reads its stdin as it is imported: it is not one to mount)."""
    source = path.read_text(encoding="utf-8")
    return re.search(r"^server = Server\(", source, re.MULTILINE) is not None


MOUNTED = {path.stem: load(path) for path in sorted((ROOT / "examples").glob("*.py"))
           if defines_a_server(path) and path.stem not in NOT_MOUNTED}
MOUNTED["conformance"] = load(ROOT / "tests" / "conformance_server.py")


def application(environ, start_response):
    server = MOUNTED.get(shift_path_info(environ))
    if server is None:
        body = json.dumps({"mounted": sorted(MOUNTED)}).encode()
        start_response("404 Not Found", [("Content-Type", "application/json"),
                                         ("Content-Length", str(len(body)))])
        return [body]
    return server(environ, start_response)
