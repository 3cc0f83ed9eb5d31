"""`commscope history` given bad input: long or hostile selectors, --list --json, echoes."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from commscope.check.history import parse_selector
from commscope.errors import UsageError
from tests.synthetic_checks import store_run

NAMES = ["p2p_latency_seconds", "coll_time_seconds"]


def test_a_selector_reads_quoted_commas_bare_values_and_empty_parts() -> None:
    read = parse_selector(' p2p_latency_seconds{pair="a,b" , bytes = 8 ,, } ', NAMES)
    assert (read.name, read.labels) == ("p2p_latency_seconds", {"pair": "a,b", "bytes": "8"})
    assert parse_selector("coll_time_seconds", NAMES).labels == {}
    assert parse_selector("coll_time_seconds{}", NAMES).labels == {}


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('p2p_latency_seconds{pair="a"bytes="8"}', 'is not label="value"'),
        ("p2p_latency_seconds{pair}", 'is not label="value"'),
        ('p2p_latency_seconds{pair="a"', "is not a figure selector"),
        ("p2p_latency_seconds x", "is not a figure selector"),
        ("nope_seconds", "no figure is named 'nope_seconds'"),
    ],
)
def test_a_malformed_selector_is_refused_saying_what(text: str, said: str) -> None:
    with pytest.raises(UsageError, match=said):
        parse_selector(text, NAMES)


HOSTILE = [  # each took the regular expressions minutes (cubic in the run of spaces)
    "p2p_latency_seconds{a=" + " " * 100_000 + '"}',
    "p2p_latency_seconds{" + "a" * 100_000 + "}",
    "p2p_latency_seconds{" + "," * 100_000 + "}",
    "p2p_latency_seconds{" + 'a="1",' * 16_666 + "}",
    "p2p_latency_seconds{" + "{" * 100_000,
]


@pytest.mark.parametrize("text", HOSTILE, ids=["spaces", "letters", "commas", "labels", "braces"])
def test_a_hundred_thousand_character_selector_is_read_or_refused_in_one_pass(text: str) -> None:
    started = time.perf_counter()
    try:
        read = parse_selector(text, NAMES)
    except UsageError as err:
        message = str(err)
        assert len(message) < 300 and "\n" not in message  # the selector shown cut short
    else:
        assert read.name == "p2p_latency_seconds" and set(read.labels) <= {"a"}
    print(f"{len(text)} characters: {time.perf_counter() - started:.4f} s")  # shown with -s


def test_history_list_json_is_json(cli: Any) -> None:
    out = cli("history", "--list", "--json", check=True)
    figures = json.loads(out.stdout)["figures"]
    latency = next(f for f in figures if f["name"] == "p2p_latency_seconds")
    assert latency["unit"] == "seconds" and latency["better"] == "lower" and latency["help"]


def test_an_unmatched_selector_is_echoed_with_control_characters_escaped(cli: Any) -> None:
    store_run(cli.store, 1)
    out = cli("history", 'p2p_latency_seconds{pair="\x1b[2J\x07"}', check=True)
    assert "\x1b" not in out.stdout and "\x07" not in out.stdout
    assert 'no stored run has p2p_latency_seconds{pair="\\x1b[2J\\x07"}' in out.stdout
