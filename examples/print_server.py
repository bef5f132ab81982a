"""The naive server's get_weather (examples/naive_server.py), in mcp_min: the same print(),
and nothing breaks, because while it serves mcp_min points stdout (fd 1 and sys.stdout) at
stderr and keeps a private copy of the real stdout for protocol bytes.

    python3 mcp_min.py call -- python3 examples/print_server.py get_weather '{"city": "Lisbon"}'
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mcp_min import Server  # noqa: E402

server = Server("print-weather", "1.0.0")
WEATHER = {"lisbon": "Sunny, 22°C", "london": "Drizzle, 13°C", "tokyo": "Clear, 19°C"}


@server.tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    print(f"DEBUG looking up {city}")            # lands on stderr, not on the wire
    return WEATHER.get(city.lower(), "no idea")


if __name__ == "__main__":
    server.run()
