"""Hypothesis strategies for hostile input: number-like text, damaged files, models."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# Texts that are numbers to a lax reader and none (or a dangerous one) to commscope.
HOSTILE = [
    "inf",
    "-inf",
    "Infinity",
    "nan",
    "NaN",
    "5e-324",
    "4.9e-324",
    "1e-300",
    "0",
    "0.0",
    "0.00",
    "-0",
    "-1",
    "-0.5",
    "1e999",
    "1e308",
    "1.8e308",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "99999999999999999999",
    "4294967296",
    "2147483648",
    "2147483647",
    "17179869184",
    "1e20",
    "8\u00b2",
    "\u00b2",
    "\u0661\u0662",
    "\uff11\uff12",
    "\u09e8",
    "1_000",
    "0x10",
    "0b1",
    "",
    " ",
    "+5",
    ".",
    "1.",
    ".5",
    "1e",
    "e5",
    "--1",
    "1,5",
    "1 5",
    "\x00",
    "\x1b[2J",
    "[/]",
    "9" * 5000,
    "1" + "0" * 400,
    "16GiB",
    "3GiB",
    "2GiB",
    "1T",
    "-4K",
    "4MiB",
    "64K",
    "1KB",
]


def number_text() -> st.SearchStrategy[str]:
    """Text where a number belongs: hostile cases, integers, floats in several formats."""
    floats = st.floats(allow_nan=True, allow_infinity=True)
    return st.one_of(
        st.sampled_from(HOSTILE),
        st.integers(min_value=-(2**70), max_value=2**70).map(str),
        floats.map(repr),
        floats.map(lambda x: f"{x:.2f}"),
        floats.map(lambda x: f"{x:g}"),
        st.text(max_size=6),
    )


@st.composite
def mutated_lines(draw: st.DrawFn, lines: list[str]) -> bytes:
    """``lines`` (a real output file) with one to three damages, as the file's bytes."""
    out = list(lines)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        kind = draw(
            st.sampled_from(
                ["token", "token", "token", "token", "drop", "repeat", "insert", "truncate", "line"]
            )
        )
        at = draw(st.integers(min_value=0, max_value=max(len(out) - 1, 0)))
        if kind == "token" and out:
            words = out[at].split() or [""]
            k = draw(st.integers(min_value=0, max_value=len(words) - 1))
            words[k] = draw(number_text())
            out[at] = "  ".join(words)
        elif kind == "drop" and out:
            del out[at]
        elif kind == "repeat" and out:
            out.insert(at, out[at])
        elif kind == "insert":
            out.insert(at, draw(st.one_of(number_text(), st.text(max_size=40))))
        elif kind == "truncate":
            out = out[:at]
        elif kind == "line" and out:
            out[at] = " ".join(draw(st.lists(number_text(), min_size=1, max_size=6)))
    data = ("\n".join(out) + "\n").encode("utf-8", "surrogateescape")
    if draw(st.integers(min_value=0, max_value=40)) == 0:  # now and then not UTF-8 at all
        data += b"\xff\xfe 8 1.0\n"
    return data


def _rate() -> st.SearchStrategy[Any]:
    good = st.sampled_from(["10Gbit/s", "125MB/s", "1e9", "12.5GB/s", "100Gbps", "1GiB/s"])
    bad = st.sampled_from(
        [
            "1e999GB/s",
            "infBps",
            "-5MB/s",
            "0",
            "nanB/s",
            "1e-300",
            "fast",
            "8\u00b2GB/s",
            "10 Gbit/s/s",
        ]
    )
    return st.one_of(
        good,
        good,
        bad,
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(2**70), max_value=2**70),
        number_text(),
    )


def _latency() -> st.SearchStrategy[Any]:
    good = st.sampled_from(["1.5us", "0.2ms", "2e-6", "1us", "80ns", 0])
    bad = st.sampled_from(["1e999s", "-1us", "infs", "soon", "2s", "1e-400us", "\u0661us"])
    return st.one_of(good, good, bad, st.floats(allow_nan=True, allow_infinity=True), number_text())


def _count(good_max: int) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.integers(min_value=1, max_value=good_max),
        st.integers(min_value=1, max_value=good_max),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.sampled_from([0, -1, 1.5, True, None, "4", 2**63, 10**20, [], {}]),
        st.floats(allow_nan=True, allow_infinity=True),
    )


def _link() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.fixed_dictionaries({}, optional={"bandwidth": _rate(), "latency": _latency()}),
        st.sampled_from([None, 5, "fast", [1, 2]]),
    )


# Node names a hostfile, rankfile or launcher would take for something other than one host.
HOSTILE_NODE_NAMES = [
    "a;rm -rf ~",
    "-oProxyCommand=x",
    "two words",
    "a\nb",
    "a\rb",
    "x\x1bq",
    "\x00",
    "",
    " ",
    "[/]",
    "$(id)",
    "n0,n1",
    "n0:2",
    "under_score",
    "n0.",
    "x" * 300,
]


def _names() -> st.SearchStrategy[Any]:
    name = st.one_of(
        st.sampled_from(["n0", "n1", "n2", "n3", "n0", "c1.example.org", "7"]),
        st.sampled_from(HOSTILE_NODE_NAMES),
        st.text(max_size=12),
        st.integers(min_value=-5, max_value=10),
    )
    return st.lists(name, min_size=0, max_size=6)


def _switches() -> st.SearchStrategy[Any]:
    nodes = st.one_of(
        st.sampled_from(["0-1", "0-3", "2-3", "3-0", "0-99999999999999999999", "0-\u00b2"]),
        st.lists(
            st.one_of(st.integers(min_value=-2, max_value=5), st.sampled_from(["n0", "n1", "zz"])),
            max_size=4,
        ),
    )
    switch = st.fixed_dictionaries(
        {"nodes": nodes}, optional={"name": st.text(max_size=6), "uplink": _link()}
    )
    return st.lists(switch, max_size=3)


def _factors() -> st.SearchStrategy[Any]:
    pair = st.tuples(
        st.one_of(st.integers(min_value=-1, max_value=2**40), st.sampled_from([0, 0, 1024, 65536])),
        st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1.0, 0.5, 2.0])),
    ).map(list)
    return st.one_of(st.lists(pair, max_size=4), st.sampled_from([None, "x", 3]))


GOOD_RATES = ["10Gbit/s", "125MB/s", "1e9", "12.5GB/s", "100Gbps", "1GiB/s"]
GOOD_LATENCIES = ["1.5us", "0.2ms", "2e-6", "1us", "80ns"]


@st.composite
def _valid_model(draw: st.DrawFn, simulation: bool) -> dict[str, Any]:
    nodes = draw(st.integers(min_value=1, max_value=6))
    doc: dict[str, Any] = {
        "nodes": nodes if draw(st.booleans()) else [f"n{i}" for i in range(nodes)],
        "sockets": draw(st.integers(min_value=1, max_value=2)),
        "cores": draw(st.integers(min_value=1, max_value=4)),
        "channels": {
            level: {
                "bandwidth": draw(st.sampled_from(GOOD_RATES)),
                "latency": draw(st.sampled_from(GOOD_LATENCIES)),
            }
            for level in ("memory", "socket", "nic")
        },
    }
    if draw(st.booleans()):
        doc["name"] = draw(st.text(max_size=12))
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        doc["switches"] = [
            {"name": "leaf", "nodes": f"0-{nodes - 1}", "uplink": {"bandwidth": "100Gbit/s"}}
        ]
    if simulation and draw(st.booleans()):
        doc["simulation"] = {
            "nic": {"bandwidth": "117MB/s", "latency": "7.6us"},
            "switch_latency": "1us",
            "lat_factor": [[0, 1.0], [1024, 1.1]],
            "bw_factor": [[0, 0.5]],
            "eager_bytes": 65536,
        }
    return doc


# Where a hostile value goes in a model: (section, key) pairs; "" is the top level.
_SPOTS = [
    ("", "nodes"),
    ("", "sockets"),
    ("", "cores"),
    ("", "name"),
    ("", "switches"),
    ("memory", "bandwidth"),
    ("memory", "latency"),
    ("nic", "bandwidth"),
    ("nic", "latency"),
    ("socket", "bandwidth"),
    ("socket", "latency"),
]
_SIM_SPOTS = [
    ("simulation", "switch_latency"),
    ("simulation", "lat_factor"),
    ("simulation", "bw_factor"),
    ("simulation", "eager_bytes"),
    ("simulation", "crosstraffic"),
    ("simulation", "nic"),
    ("simulation", "memory"),
]


def _hostile_for(key: str) -> st.SearchStrategy[Any]:
    if key == "bandwidth":
        return _rate()
    if key in ("latency", "switch_latency"):
        return _latency()
    if key in ("nodes",):
        return st.one_of(_count(6), _names())
    if key in ("sockets", "cores", "eager_bytes"):
        return _count(4)
    if key == "switches":
        return _switches()
    if key in ("lat_factor", "bw_factor"):
        return _factors()
    if key in ("nic", "memory"):
        return _link()
    if key == "crosstraffic":
        return st.sampled_from([True, False, "yes", 1, None])
    return st.one_of(st.text(max_size=20), st.sampled_from(["[/]", "x\x1b[2J", "", 5, None]))


@st.composite
def model_document(draw: st.DrawFn, simulation: bool) -> dict[str, Any]:
    """A valid cluster model as decoded YAML with zero to two hostile values put in."""
    doc = draw(_valid_model(simulation))
    spots = _SPOTS + (_SIM_SPOTS if simulation else [])
    for _ in range(draw(st.integers(min_value=0, max_value=2))):
        section, key = draw(st.sampled_from(spots))
        value = draw(_hostile_for(key))
        if section == "":
            doc[key] = value
        elif section == "simulation":
            doc.setdefault("simulation", {})[key] = value
        else:
            doc["channels"][section][key] = value
    return doc


# Nesting deep enough to exhaust the YAML reader's recursion (about a second to refuse).
DEEP_MODEL = "nodes: " + "[" * 3000 + "]" * 3000 + "\nsockets: 1\ncores: 2\n"
# Raw YAML that no dict-to-YAML dump produces: values YAML cannot build, aliases, tabs.
RAW_MODELS = [
    "nodes: 2\nsockets: 1\ncores: 2\nname: 2001-13-45\n",
    "nodes: 2\nsockets: 1\ncores: 2\nname: !!python/object/apply:os.system [true]\n",
    "nodes: &a [*a]\nsockets: 1\ncores: 2\n",
    "nodes: 1e999\nsockets: 1\ncores: 2\n",
    "nodes: 0x7fffffffffffffffffff\nsockets: 1\ncores: 2\n",
    "nodes: 2\nsockets: 1\ncores: 2\nchannels: {nic: {bandwidth: .inf, latency: .nan}}\n",
    "\xff\xfe",
    "",
    "nodes: 2\nsockets: 1\ncores: 2\n\tbad: tab\n",
]
