"""Pure unit tests: HTML reduced to text (bounded, linear work), rich outputs read as text, images picked
within bounds."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_pair_mcp.render import CUT_MARKER, ImageLimits, is_repr, output_text, pick_images, render_outputs
from jupyter_pair_mcp.richtext import html_to_text, reduce_html

BIG = 1 << 30


@pytest.mark.parametrize(
    ("html", "text"),
    [
        ("<b>Total</b>: <i>3</i>", "Total: 3"),
        ("<p>one</p><p>two</p><div>three<br>four</div>", "one\ntwo\nthree\nfour"),
        (
            "<table><thead><tr><th>a</th><th>b</th></tr></thead><tr><td>1</td><td>x<br>y</td></tr></table>",
            "a | b\n1 | x y",
        ),
        ("<ul><li>one<li>two</ul>", "- one\n- two"),
        ("a<script>alert('<p>x</p>')</script><style>p {color: red}</style>b", "ab"),
        ("&lt;tag&gt; &amp; &quot;q&quot; &#233;&nbsp;x", '<tag> & "q" é x'),
        ("  lots   of\n\n  space  <p>  and </p>", "lots of space\nand"),
        ("<pre>  keep\n    indent</pre>", "keep\n    indent"),
        ("<h1>Title</h1>text<hr/>more", "Title\ntext\nmore"),
        ('<img src="x.png" alt="a  plot">', "[image: a plot]"),
        (
            "<table><tr><td><table><tr><td>in</td><td>ner</td></tr></table></td><td>out</td></tr></table>",
            "in | ner | out",
        ),
        ("<div><p>", ""),
        ("unclosed <b>bold", "unclosed bold"),
    ],
)
def test_html_reads_as_its_text(html: str, text: str) -> None:
    assert html_to_text(html) == text


def test_big_html_is_linear_work() -> None:
    row = "<tr><td>alpha &amp; beta</td><td>1.25</td><td><b>x</b></td></tr>"
    small, large = reduce_html(row * 5_000, BIG, BIG), reduce_html(row * 20_000, BIG, BIG)
    assert small.unread == large.unread == 0
    assert large.text.count("\n") == 19_999
    assert large.text.startswith("alpha & beta | 1.25 | x\nalpha")
    assert large.work / small.work < 4.2, "four times the input, four times the work"
    assert large.work < 1.2 * len(row) * 20_000


@pytest.mark.parametrize("opening", ["<!--", "<a", "</", "<!", "<script>"])
def test_malformed_html_is_bounded_work(opening: str) -> None:
    """A construct that never closes is re-scanned on each feed (pieces doubling: about twice the input in
    all); the stdlib's close(), quadratic on such input, only ever gets a short tail."""
    for n in (100_000, 400_000):
        html = "<p>start</p>" + opening * (n // len(opening))
        reduced = reduce_html(html, BIG, BIG)
        assert reduced.work <= 3 * len(html)
        assert reduced.unread > 0
        assert reduced.text.startswith("start")


def test_reading_stops_at_the_text_wanted_or_the_input_budget() -> None:
    row = "<tr><td>cell</td><td>42</td></tr>"
    html = "<table>" + row * 100_000 + "</table>"
    wanted = reduce_html(html, 2000, 1 << 20)
    assert 2000 < len(wanted.text) < 12_000
    assert wanted.unread > len(html) - 20_000
    assert wanted.work < 20_000, "only the start of the HTML is read"
    tags_only = "<div></div>" * 100_000
    budget = reduce_html(tags_only, 2000, 32_768)
    assert budget.text == ""
    assert 0 <= budget.unread - (len(tags_only) - 32_768) < 11, "what was not read, and a tag cut in two"
    assert budget.work < 2 * 32_768


def test_rich_output_reads_when_text_plain_is_a_repr() -> None:
    def display(**data: Any) -> dict[str, Any]:
        return {"output_type": "display_data", "data": data, "metadata": {}}

    html_repr = "<IPython.core.display.HTML object>"
    outputs = [
        display(**{"text/plain": html_repr, "text/html": "<b>Total</b><table><tr><td>a</td><td>1</td></tr></table>"}),
        display(**{"text/plain": "<IPython.core.display.Markdown object>", "text/markdown": "# Hi\n*x*"}),
        display(**{"text/plain": "<IPython.core.display.JSON object>", "application/json": {"a": [1, 2], "b": None}}),
        display(**{"text/plain": "<IPython.core.display.Latex object>", "text/latex": "$x^2$"}),
        display(**{"text/html": ["<p>no ", "plain</p>"]}),
        display(**{"text/plain": "42", "text/html": "<b>forty-two</b>"}),
        display(**{"text/plain": "<object object at 0x7f3a2c1b0e50>", "text/html": "<i>obj</i>"}),
        display(**{"text/plain": "<__main__.Thing at 0x10>"}),
        display(**{"text/plain": "<IPython.core.display.Image object>", "image/png": "AAAA"}),
        display(**{"text/plain": "<Figure size 640x480 with 1 Axes>", "image/png": "AAAA"}),
        display(**{"application/vnd.custom+json": {}}),
    ]
    assert [o["text"] for o in render_outputs(outputs, 2000)] == [
        "Total\na | 1",
        "# Hi\n*x*",
        '{"a":[1,2],"b":null}',
        "$x^2$",
        "no plain",
        "42",
        "obj",
        "<__main__.Thing at 0x10>",
        "[image/png image, 3 bytes]",
        "[image/png image, 3 bytes: <Figure size 640x480 with 1 Axes>]",
        "[display_data output: application/vnd.custom+json]",
    ]


def test_repr_detection() -> None:
    assert is_repr("<IPython.core.display.HTML object>")
    assert is_repr("<function f at 0x7f0000000000>\n")
    assert not is_repr("<Figure>")
    assert not is_repr("[<a object>, <b object>]")
    assert not is_repr("<" + "x" * 400 + " object>")


def test_rich_text_is_cut_with_a_marker() -> None:
    markdown = {"output_type": "display_data", "data": {"text/markdown": "m" * 50}}
    assert output_text(markdown, 10)[0] == "m" * 10 + "\n[... 40 more characters cut]"
    html = {"output_type": "display_data", "data": {"text/html": "<p>word</p>" * 10_000}}
    text, _ = output_text(html, 100)
    head, marker = text.rsplit("\n[", 1)
    assert len(head) <= 100 and head.startswith("word\nword")
    assert CUT_MARKER.search(text[-64:]), "get_notebook finds the marker in an output's last 64 characters"
    assert marker.endswith("more characters of HTML not read]")
    smaller = {"output_type": "display_data", "data": {"text/html": "<p>word</p>" * 1000}}
    assert output_text(smaller)[0].count("word") == 1000, "without max_length the caller cuts"


def test_images_are_picked_within_bounds() -> None:
    limits = ImageLimits(count=3, each=10, total=25)
    found = [("a", "image/png", "x" * 8), ("a", "image/png", "y" * 11), ("b", "image/jpeg", "z" * 9)]
    found += [("c", "image/png", "w" * 9), ("d", "image/png", "v" * 2), ("e", "image/png", "u")]
    picked = pick_images(found, limits)
    assert [(cell, data[0]) for cell, _, data in picked.images] == [("a", "x"), ("b", "z"), ("d", "v")]
    assert dict(picked.omitted) == {"each": 1, "total": 1, "count": 1}
    assert picked.reason(limits) == (
        "1 larger than 10 base64 bytes; 1 past 25 base64 bytes of images in all; 1 past the 3 images a result carries"
    )
    assert pick_images([], limits).reason(limits) is None
