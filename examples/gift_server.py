"""The gift picker: a tool, a resource and a prompt, as in the MCP message-format lessons.

    python3 examples/gift_server.py                 # serve over stdio (for a client)
    python3 mcp_min.py demo                         # watch a client talk to its built-in
                                                    # copy (a shorter catalogue)

Tool      suggest_gifts(occasion, budget, recipient) -> gift ideas, with structured output,
                                                       shown in the widget where the client
                                                       renders one
Tool      pick_gift(occasion, budget)               -> one gift, after asking the user who
                                                       it is for (elicitation)
Resource  mcp://gift-server/resources/gift_catalog  -> the whole catalogue (JSON)
Resource  ui://gift-server/picker.html              -> the widget (gift_picker.html beside
                                                       this file; docs/widgets.md)
Prompt    gift_congrats_style(recipient, occasion)  -> a style guide for the card
"""

import os
import sys
from pathlib import Path
from typing import Literal, TypedDict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mcp_min import CapabilityError, Context, Server, ToolError  # noqa: E402

server = Server("gift-server", "1.0.0", title="Gift picker",
                instructions="Suggests gifts from a small catalogue. Call suggest_gifts with "
                             "the occasion, a budget in dollars and a few words about the "
                             "recipient; read the gift_catalog resource for everything on offer.")

Occasion = Literal["birthday", "wedding", "anniversary", "graduation", "housewarming", "thank-you"]

# name, price in dollars, what it suits (occasions), who it suits (interest words)
CATALOG = [
    ("Board game: Catan", 45, {"birthday", "housewarming"}, {"board games", "games", "strategy", "friends"}),
    ("Dice set with velvet bag", 20, {"birthday", "thank-you"}, {"board games", "games", "roleplaying"}),
    ("Cooperative game: Pandemic", 40, {"birthday", "graduation"}, {"board games", "games", "teamwork"}),
    ("Hardcover classic novel", 25, {"birthday", "graduation", "thank-you"}, {"books", "reading", "literature"}),
    ("E-reader", 130, {"birthday", "graduation", "anniversary"}, {"books", "reading", "travel", "tech"}),
    ("Cast-iron skillet", 35, {"wedding", "housewarming"}, {"cooking", "food", "kitchen"}),
    ("Chef's knife", 90, {"wedding", "housewarming", "anniversary"}, {"cooking", "food", "kitchen"}),
    ("Stand mixer", 280, {"wedding"}, {"baking", "cooking", "kitchen"}),
    ("Espresso grinder", 120, {"wedding", "housewarming", "birthday"}, {"coffee", "kitchen", "mornings"}),
    ("Specialty coffee sampler", 30, {"thank-you", "birthday", "housewarming"}, {"coffee", "food", "mornings"}),
    ("Houseplant in a ceramic pot", 28, {"housewarming", "thank-you"}, {"plants", "gardening", "home"}),
    ("Gardening tool set", 55, {"housewarming", "birthday"}, {"gardening", "plants", "outdoors"}),
    ("Hiking daypack", 70, {"birthday", "graduation"}, {"hiking", "outdoors", "travel"}),
    ("Star map of a special night", 60, {"anniversary", "wedding"}, {"romance", "astronomy", "memories"}),
    ("Weekend cooking class for two", 150, {"anniversary", "wedding"}, {"cooking", "romance", "experiences"}),
    ("Concert tickets", 110, {"birthday", "anniversary"}, {"music", "concerts", "experiences"}),
    ("Wireless headphones", 95, {"birthday", "graduation"}, {"music", "tech", "travel"}),
    ("Personalised leather journal", 38, {"graduation", "thank-you", "birthday"}, {"writing", "journaling", "travel"}),
    ("Handwritten thank-you card set", 12, {"thank-you"}, {"writing", "stationery"}),
    ("Jigsaw puzzle, 1000 pieces", 22, {"birthday", "thank-you"}, {"puzzles", "games", "home"}),
]


class Gift(TypedDict):
    name: str
    price: float
    why: str


class Suggestions(TypedDict):
    occasion: str
    budget: float
    gifts: list[Gift]


PICKER = "ui://gift-server/picker.html"


# The widget: an MCP Apps host (ChatGPT, Claude, VS Code) renders it with the results of
# suggest_gifts; its buttons call suggest_gifts and pick_gift through the host.
@server.resource(PICKER, name="gift_picker", title="Gift picker",
                 description="Shows gift ideas; asks for more, or picks one", prefers_border=True)
def gift_picker() -> str:
    return (Path(__file__).parent / "gift_picker.html").read_text(encoding="utf-8")


# Clients without widgets read the same ideas in the text of the result (JSON).
@server.tool(title="Gift ideas generator", annotations={"readOnlyHint": True, "openWorldHint": False},
             ui=PICKER)
def suggest_gifts(occasion: Occasion, budget: float, recipient: str = "") -> Suggestions:
    """Suggest gift ideas for an occasion and a budget.

    Args:
        occasion: what the gift is for
        budget: the most to spend, in dollars
        recipient: who the gift is for, e.g. "friend who loves board games"
    """
    if budget <= 0:
        raise ToolError("The budget must be more than $0.")
    words = recipient.lower()
    scored = []
    for name, price, occasions, interests in CATALOG:
        if price > budget or occasion not in occasions:
            continue
        matched = sorted(i for i in interests if i in words)
        scored.append((len(matched), -price, name, price, matched))
    if not scored:
        raise ToolError(f"No gifts in the catalogue for a {occasion} within ${budget:g}. "
                        "Try a larger budget or another occasion.")
    scored.sort(reverse=True)
    gifts = [Gift(name=name, price=price,
                  why=f"matches {', '.join(matched)}" if matched else f"a safe {occasion} pick")
             for _, _, name, price, matched in scored[:3]]
    return Suggestions(occasion=occasion, budget=budget, gifts=gifts)


@server.tool(title="Pick one gift", annotations={"readOnlyHint": True, "openWorldHint": False})
def pick_gift(occasion: Occasion, budget: float, ctx: Context) -> Gift:
    """Pick one gift for an occasion and a budget, asking the user who it is for.

    Args:
        occasion: what the gift is for
        budget: the most to spend, in dollars
    """
    question = {"type": "object", "required": ["recipient"], "properties": {"recipient": {
        "type": "string", "description": 'a few words, e.g. "friend who loves board games"'}}}
    try:
        answer = ctx.elicit("Who is the gift for?", question)
    except CapabilityError:          # a client that cannot ask its user: pick without knowing
        answer = {"action": "decline"}
    recipient = ""
    if answer["action"] == "accept":
        recipient = answer.get("content", {}).get("recipient", "")
    return suggest_gifts(occasion, budget, recipient)["gifts"][0]


@server.resource("mcp://gift-server/resources/gift_catalog", name="gift_catalog",
                 description="Base catalog of gifts with categories and prices",
                 mime_type="application/json")
def gift_catalog() -> dict:
    return {"gifts": [{"name": n, "price": p, "occasions": sorted(o), "interests": sorted(i)}
                      for n, p, o, i in CATALOG]}


@server.prompt(title="Congratulations style")
def gift_congrats_style(recipient: str = "a friend", occasion: str = "birthday") -> str:
    """Style guide for congratulations in a friendly tone.

    Args:
        recipient: who the card is for
        occasion: what is being celebrated
    """
    return (f"You are a friendly assistant that writes short, warm {occasion} congratulations "
            f"for {recipient}. Two or three sentences, no clichés, one personal touch, and "
            "end with a wish for the year ahead.")


if __name__ == "__main__":
    server.run()
