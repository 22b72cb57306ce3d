"""ResponseValidator: structural validity, degenerate (think-only) responses, think splitting."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_harness._model.response import (
    ModelResponse,
    ResponseValidator,
    ToolCall,
    split_think,
    visible_text,
)

VALIDATOR = ResponseValidator()
CALL = ToolCall(id="c1", name="f", arguments={}, raw_arguments="{}")


def resp(
    content: str | None,
    *,
    tools: bool = False,
    interrupted: bool = False,
    media: tuple[str, ...] = (),
) -> ModelResponse:
    return ModelResponse(
        content=content,
        tool_calls=(CALL,) if tools else (),
        interrupted=interrupted,
        media=media,
    )


IMAGE = ("image/png",)


OK = (True, None)
EMPTY = (False, "empty_response")
INTERRUPTED = (False, "interrupted")

# (response, valid() result, degenerate() result)
CASES = [
    pytest.param(None, (False, "nil_response"), False, id="none"),
    # interrupted is checked before tool calls and before content
    pytest.param(resp("hello", interrupted=True), INTERRUPTED, False, id="interrupted-text"),
    pytest.param(resp(None, interrupted=True), INTERRUPTED, False, id="interrupted-no-content"),
    pytest.param(
        resp("<think>x</think>", interrupted=True), INTERRUPTED, False, id="interrupted-think-only"
    ),
    pytest.param(
        resp(None, tools=True, interrupted=True), INTERRUPTED, False, id="interrupted-tool-calls"
    ),
    pytest.param(
        resp("hi", tools=True, interrupted=True), INTERRUPTED, False, id="interrupted-text-tools"
    ),
    # tool calls: valid, never degenerate
    pytest.param(resp(None, tools=True), OK, False, id="tools-content-none"),
    pytest.param(resp("", tools=True), OK, False, id="tools-content-empty"),
    pytest.param(resp("  \n", tools=True), OK, False, id="tools-content-blank"),
    pytest.param(resp("<think>plan</think>", tools=True), OK, False, id="tools-think-only"),
    pytest.param(resp("<think>unclosed", tools=True), OK, False, id="tools-unclosed-think"),
    pytest.param(resp("calling f", tools=True), OK, False, id="tools-with-text"),
    # media (an image): valid, never degenerate, with or without text
    pytest.param(resp(None, media=IMAGE), OK, False, id="media-content-none"),
    pytest.param(resp("<think>x</think>", media=IMAGE), OK, False, id="media-think-only"),
    pytest.param(resp("Here it is.", media=IMAGE), OK, False, id="media-with-text"),
    pytest.param(resp(None, media=IMAGE, interrupted=True), INTERRUPTED, False, id="media-cut"),
    # empty content: invalid (and blank visible text, hence degenerate too)
    pytest.param(resp(None), EMPTY, True, id="content-none"),
    pytest.param(resp(""), EMPTY, True, id="content-empty"),
    pytest.param(resp(" \t\n "), EMPTY, True, id="content-whitespace"),
    # plain text
    pytest.param(resp("hello"), OK, False, id="plain-text"),
    pytest.param(resp("  hello  \n"), OK, False, id="plain-text-padded"),
    pytest.param(resp("a < b > c"), OK, False, id="angle-brackets-not-tags"),
    pytest.param(resp("<thinker>x</thinker>"), OK, False, id="other-tag-not-think"),
    # think-only: valid but degenerate
    pytest.param(resp("<think>x</think>"), OK, True, id="think-only"),
    pytest.param(resp("<think></think>"), OK, True, id="think-empty-block"),
    pytest.param(resp("  <think>x</think>\n "), OK, True, id="think-only-padded"),
    pytest.param(resp("<thinking>x</thinking>"), OK, True, id="thinking-only"),
    pytest.param(resp("<THINK>x</THINK>"), OK, True, id="upper-case-tags"),
    pytest.param(resp("<Thinking>x</Thinking>"), OK, True, id="mixed-case-tags"),
    pytest.param(resp("<THINK>x</think>"), OK, True, id="case-differs-open-close"),
    pytest.param(resp("< think >x</ think >"), OK, True, id="spaces-inside-tags"),
    pytest.param(resp("<\tthinking\n>x< / thinking >"), OK, True, id="tabs-newlines-in-tags"),
    pytest.param(resp("<thinking>x</thinking>answer"), OK, False, id="thinking-then-text"),
    # unclosed block runs to the end
    pytest.param(resp("<think>still thinking..."), OK, True, id="unclosed-only"),
    pytest.param(resp("  <think>still thinking"), OK, True, id="unclosed-after-whitespace"),
    pytest.param(resp("answer <think>more"), OK, False, id="text-before-unclosed"),
    pytest.param(resp("<think>a</think><think>b answer"), OK, True, id="closed-then-unclosed-only"),
    pytest.param(resp("<think>a</think>answer<think>b"), OK, False, id="closed-text-unclosed"),
    # several blocks
    pytest.param(
        resp("<think>a</think>\n \t<thinking>b</thinking>\n"), OK, True, id="blocks-whitespace"
    ),
    pytest.param(
        resp("<think>a</think> middle <thinking>b</thinking>"), OK, False, id="blocks-text-between"
    ),
    pytest.param(resp("<think>a</think>\n\nThe answer is 42."), OK, False, id="text-after-block"),
    pytest.param(resp("Intro <think>a</think>"), OK, False, id="text-before-block"),
    # mismatched pair: the opening tag stays unclosed and runs to the end
    pytest.param(resp("<think>a</thinking>"), OK, True, id="mismatched-pair"),
    pytest.param(resp("<thinking>a</think>"), OK, True, id="mismatched-pair-reversed"),
    pytest.param(resp("<think>a</thinking> tail"), OK, True, id="mismatched-pair-tail-swallowed"),
    pytest.param(resp("head <think>a</thinking>"), OK, False, id="text-before-mismatched"),
    # multi-line content
    pytest.param(
        resp("<think>\nline one\nline two\n\n</think>"), OK, True, id="multiline-think-only"
    ),
    pytest.param(
        resp("<think>\nstep 1\nstep 2\n</think>\nFinal:\nyes\n"),
        OK,
        False,
        id="multiline-then-text",
    ),
]


@pytest.mark.parametrize(("response", "expected_valid", "expected_degenerate"), CASES)
def test_valid_and_degenerate(
    response: ModelResponse | None,
    expected_valid: tuple[bool, str | None],
    expected_degenerate: bool,
) -> None:
    assert VALIDATOR.valid(response) == expected_valid
    assert VALIDATOR.degenerate(response) is expected_degenerate


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        pytest.param(None, "nil_response", id="none"),
        pytest.param(resp("hi", tools=True, interrupted=True), "interrupted", id="interrupted"),
        pytest.param(resp("   "), "empty_response", id="empty"),
        pytest.param(resp(None), "empty_response", id="none-content-not-degenerate"),
        pytest.param(resp("<think>x</think>"), "degenerate", id="think-only"),
        pytest.param(resp("<think>unclosed"), "degenerate", id="unclosed"),
        pytest.param(resp("<think>x</think>", tools=True), None, id="tools-think-only"),
        pytest.param(resp(None, media=IMAGE), None, id="media-only"),
        pytest.param(resp("answer"), None, id="plain"),
        pytest.param(resp("<think>x</think>answer"), None, id="think-then-answer"),
    ],
)
def test_problem(response: ModelResponse | None, expected: str | None) -> None:
    assert VALIDATOR.problem(response) == expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(None, (None, ""), id="none"),
        pytest.param("", (None, ""), id="empty"),
        pytest.param("just text", (None, "just text"), id="no-block"),
        pytest.param("a < b", (None, "a < b"), id="no-block-angle"),
        pytest.param("<think> plan </think>answer", ("plan", "answer"), id="one-block"),
        pytest.param("<Thinking>\nplan\n</Thinking>", ("plan", ""), id="one-block-only"),
        pytest.param(
            "<think>a</think>x <thinking> b </thinking>y",
            ("a\n\nb", "x y"),
            id="two-blocks",
        ),
        pytest.param(
            "<think>a</think>1<think>b</think>2<think>c</think>3",
            ("a\n\nb\n\nc", "123"),
            id="three-blocks",
        ),
        pytest.param("answer <think> still going ", ("still going", "answer "), id="unclosed"),
        pytest.param(
            "<think>a</think>answer<think>b",
            ("a\n\nb", "answer"),
            id="closed-then-unclosed",
        ),
        pytest.param("<think>a</thinking>", ("a</thinking>", ""), id="mismatched"),
    ],
)
def test_split_think(content: str | None, expected: tuple[str | None, str]) -> None:
    assert split_think(content) == expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(None, "", id="none"),
        pytest.param("plain", "plain", id="plain"),
        pytest.param("x<think>a</think>y", "xy", id="inner-block"),
        pytest.param("x<think>a", "x", id="unclosed"),
        pytest.param("<think>a</think>\n", "\n", id="not-stripped"),
    ],
)
def test_visible_text(content: str | None, expected: str) -> None:
    assert visible_text(content) == expected


def test_model_response_text_uses_visible_text() -> None:
    assert resp("<think>a</think>\n  answer \n").text == "answer"
    assert resp(None).text == ""


# --- properties -------------------------------------------------------------------------

WHITESPACE = st.text(alphabet=st.sampled_from(" \t\n\r\f\v\u00a0\u2003\u3000"), max_size=3)
NO_TAG_TEXT = st.text().filter(lambda s: "<" not in s)
VISIBLE = NO_TAG_TEXT.filter(lambda s: s.strip() != "")


@st.composite
def tag_name(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(["think", "thinking"]))
    flags = draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    return "".join(c.upper() if up else c for c, up in zip(name, flags, strict=True))


@st.composite
def think_block(draw: st.DrawFn) -> str:
    name = draw(tag_name())
    # the closing tag names the same tag, possibly in another case
    close = "".join(c.swapcase() if draw(st.booleans()) else c for c in name)
    ws = [draw(WHITESPACE) for _ in range(5)]
    inner = draw(NO_TAG_TEXT)
    return f"<{ws[0]}{name}{ws[1]}>{inner}<{ws[2]}/{ws[3]}{close}{ws[4]}>"


@st.composite
def unclosed_block(draw: st.DrawFn) -> str:
    ws = [draw(WHITESPACE) for _ in range(2)]
    return f"<{ws[0]}{draw(tag_name())}{ws[1]}>{draw(NO_TAG_TEXT)}"


@st.composite
def interleaving(draw: st.DrawFn, *, spoken: bool) -> str:
    """Think blocks and visible segments in random order, maybe ending in an unclosed block.

    With ``spoken`` at least one visible segment has a non-whitespace character; without it
    every visible segment is whitespace.
    """
    parts = draw(st.lists(st.one_of(think_block(), WHITESPACE), max_size=6))
    if spoken:
        index = draw(st.integers(min_value=0, max_value=len(parts)))
        parts.insert(index, draw(VISIBLE))
        for i, part in enumerate(parts):
            if i != index and not part.startswith("<") and draw(st.booleans()):
                parts[i] = draw(NO_TAG_TEXT)
    if draw(st.booleans()):
        parts.append(draw(unclosed_block()))
    return "".join(parts)


CONTENT = st.text() | st.none()


@settings(max_examples=200)
@given(content=CONTENT, interrupted=st.booleans(), tools=st.booleans())
def test_never_raises_and_types(content: str | None, interrupted: bool, tools: bool) -> None:
    response = resp(content, tools=tools, interrupted=interrupted)
    ok, reason = VALIDATOR.valid(response)
    assert isinstance(ok, bool)
    assert (reason is None) if ok else isinstance(reason, str)
    degenerate = VALIDATOR.degenerate(response)
    assert isinstance(degenerate, bool)
    problem = VALIDATOR.problem(response)
    assert problem is None or isinstance(problem, str)
    assert problem == (reason if not ok else ("degenerate" if degenerate else None))
    if interrupted:
        assert (ok, reason, degenerate) == (False, "interrupted", False)
    elif tools:
        assert (ok, reason, degenerate) == (True, None, False)


@given(content=CONTENT)
def test_visible_text_and_split_think_never_raise(content: str | None) -> None:
    text = visible_text(content)
    assert isinstance(text, str)
    reasoning, rest = split_think(content)
    assert reasoning is None or isinstance(reasoning, str)
    assert rest == text


@settings(max_examples=200)
@given(content=interleaving(spoken=True))
def test_visible_segment_is_not_degenerate(content: str) -> None:
    response = resp(content)
    assert VALIDATOR.valid(response) == OK
    assert not VALIDATOR.degenerate(response)
    assert VALIDATOR.problem(response) is None


@settings(max_examples=200)
@given(content=interleaving(spoken=False))
def test_whitespace_only_visible_is_degenerate(content: str) -> None:
    assert VALIDATOR.degenerate(resp(content))


@given(content=st.text())
def test_visible_text_idempotent(content: str) -> None:
    once = visible_text(content)
    assert visible_text(once) == once


@given(
    content=st.lists(
        st.sampled_from(["<", ">", "/", " ", "think", "ing", "THINK", "x", "\n"]), max_size=30
    ).map("".join)
)
def test_visible_text_idempotent_tag_heavy(content: str) -> None:
    once = visible_text(content)
    assert visible_text(once) == once
