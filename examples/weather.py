"""get_weather(city), the exercise from the JSON-RPC lesson, with offline data.

    python3 examples/weather.py
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mcp_min import Server, ToolError  # noqa: E402

server = Server("weather", "1.0.0", title="Weather (offline)")

# A fixed table, so the example works on a plane: city -> (condition, °C)
WEATHER = {
    "amsterdam": ("Rainy", 11), "berlin": ("Cloudy", 14), "lisbon": ("Sunny", 22),
    "london": ("Drizzle", 13), "madrid": ("Sunny", 25), "new york": ("Windy", 16),
    "paris": ("Partly cloudy", 17), "tokyo": ("Clear", 19), "sydney": ("Sunny", 24),
}


@server.tool(annotations={"readOnlyHint": True, "openWorldHint": False})
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: the city's name, e.g. "Lisbon"
    """
    try:
        condition, celsius = WEATHER[city.strip().lower()]
    except KeyError:
        known = ", ".join(sorted(c.title() for c in WEATHER))
        raise ToolError(f"No weather for {city!r}. Known cities: {known}.") from None
    return f"{condition}, {celsius}°C"


if __name__ == "__main__":
    server.run()
