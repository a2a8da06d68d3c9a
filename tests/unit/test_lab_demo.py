"""``make demo`` shows the end of pyinfra's output by whole lines, never from mid-line
(issue 40: it printed the last 4,000 characters)."""

from __future__ import annotations

from lab.demo import tail


def test_the_demo_shows_whole_lines_and_says_how_many_it_left_out():
    output = "".join(f"[node{n % 2}] Success: operation {n} with a long line of text\n"
                     for n in range(200))  # fmt: skip
    shown = tail(output, 60).splitlines()
    assert shown[0] == "    ... (140 earlier lines)"
    assert shown[1:] == output.splitlines()[-60:]
    assert tail("one\ntwo\n", 60) == "one\ntwo"
    assert tail("", 60) == ""
