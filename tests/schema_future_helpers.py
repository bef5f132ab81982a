"""Handlers written with postponed (string) annotations, as `from __future__ import annotations` makes them."""
from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING, Annotated, Literal, Optional, TypedDict

try:
    from typing import NotRequired, Required
except ImportError:         # Python 3.10: the classes below then can't be resolved, and the test is skipped
    pass

if TYPE_CHECKING:           # never imported at run time: matched by its name only
    import mcp_min


class Context:
    """Stands in for mcp_min.Context."""


class Size(enum.Enum):
    SMALL = "s"
    LARGE = "l"


@dataclasses.dataclass
class Tree:
    """A tree of labels."""
    label: str
    children: list[Tree] = dataclasses.field(default_factory=list)


class Order(TypedDict, total=False):
    item: str
    quantity: int


class Loose(TypedDict):     # as strings, NotRequired/Required escape __required_keys__ (3.11-3.13)
    a: int
    b: NotRequired[str]


class Strict(TypedDict, total=False):
    c: Required[int]
    d: int


@dataclasses.dataclass
class Base:
    x: int


class Sub(Base):            # not decorated itself: a dataclass all the same
    pass


def plan(budget: float, size: Size, tree: Optional[Tree] = None, ctx: Context = None,
         note: Annotated[str, "free text"] = "") -> list[Tree]:
    """Plan something.

    :param budget: money to spend
    :param float size: how big
    """


def takes_context_by_dotted_name(text: str, ctx: mcp_min.Context) -> Literal["ok"]:
    return "ok"


def orders(first: Order, rest: dict[str, Order]) -> Order:
    return first


def unresolvable(x: NoSuchName) -> int:    # noqa: F821 - the name is missing on purpose
    return 1
