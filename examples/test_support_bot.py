"""Example: a support-reply feature tested through the harness's model seam.

Every model response is checked for degenerate output: a reply that is empty or only
"thinking" fails the test loudly instead of being passed on (or judged) as an answer.
"""

from __future__ import annotations

import pytest

from pytest_harness import DegenerateResponse, InvalidResponse
from pytest_harness.testing import LoopbackServer, Reply

from .support_bot import INSTRUCTIONS, reply_to

pytestmark = pytest.mark.harness(cassette=False)  # scripted server, no recording needed


def test_reply_is_passed_through(scripted_model: LoopbackServer) -> None:
    scripted_model.queue(Reply(content="Sorry about the delay! Your order ships tomorrow."))
    reply = reply_to("My order is two weeks late", model="openai/support", **scripted_model.params)
    assert reply == "Sorry about the delay! Your order ships tomorrow."
    sent = scripted_model.requests[0]
    assert sent["messages"][0] == {"role": "system", "content": INSTRUCTIONS}
    assert sent["temperature"] == 0


def test_thinking_only_reply_fails_loudly(scripted_model: LoopbackServer) -> None:
    scripted_model.queue(Reply(content="<think>The customer is upset. I should...</think>"))
    with pytest.raises(DegenerateResponse, match="degenerate response"):
        reply_to("Where is my refund?", model="openai/support", **scripted_model.params)


def test_empty_reply_fails_loudly(scripted_model: LoopbackServer) -> None:
    scripted_model.queue(Reply(content=""))
    with pytest.raises(InvalidResponse, match="empty response"):
        reply_to("Hello?", model="openai/support", **scripted_model.params)


@pytest.mark.harness(degenerate="warn")
def test_a_test_can_accept_degenerate_replies_with_a_warning(
    scripted_model: LoopbackServer,
) -> None:
    scripted_model.queue(Reply(content="   "))
    with pytest.warns(UserWarning, match="empty response"):
        assert reply_to("Hi", model="openai/support", **scripted_model.params) == ""
