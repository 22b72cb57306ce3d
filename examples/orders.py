"""The feature under test: an order-lookup support agent with three tools.

It is built on ``pytest_harness.orchestrator.Orchestrator``, the agent loop the harness can
assert on: the model reads the customer's message, calls the tools it needs, reads their results and
answers. ``max_tool_rounds=1`` lets it look things up once; the request after that
asks it to answer from what it found (``tool_choice="none"``).

``model="local"`` is the embedded model (Gemma 3 270M on llama.cpp), so anyone can record
the example's cassettes with no key; a real application names its provider's model.
"""

from __future__ import annotations

from typing import Any, Literal

from pytest_harness.orchestrator import Orchestrator, tool

ORDERS: dict[str, dict[str, Any]] = {
    "A-1042": {"status": "shipped", "carrier": "DHL", "delivery": "2026-11-26"},
    "B-7": {"status": "processing", "carrier": None, "delivery": None},
}
TICKETS: list[dict[str, str]] = []

SYSTEM = (
    "You answer customers of the Acme web shop. Look up facts with the tools. "
    "Then answer in one friendly sentence that states the facts."
)


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order's status, carrier and delivery date.

    Args:
        order_id: The order id, for example X-123.
    """
    return ORDERS.get(order_id) or {"error": f"there is no order {order_id}"}


@tool
def refund_policy() -> str:
    """The shop's refund policy."""
    return "Refunds are possible within 30 days of delivery, to the original payment method."


@tool
def open_ticket(order_id: str, topic: Literal["damaged", "missing", "other"]) -> str:
    """Open a ticket for a human colleague when the customer has a problem with an order.

    Args:
        order_id: The order id.
        topic: What went wrong.
    """
    TICKETS.append({"order_id": order_id, "topic": topic})
    return f"Ticket {len(TICKETS)} opened for {order_id} ({topic})."


def support_agent(model: str = "local", **callbacks: Any) -> Orchestrator:
    """A support agent for one conversation (``callbacks`` as ``Orchestrator`` takes them)."""
    return Orchestrator(
        model,
        [lookup_order, refund_policy, open_ticket],
        system_prompt=SYSTEM,
        params={"max_tokens": 120},
        max_tool_rounds=1,
        **callbacks,
    )
