import pytest

from commscope.errors import UsageError
from commscope.units import netpipe_bases, netpipe_schedule, parse_size, parse_size_list


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("4096", 4096),
        (" 12 ", 12),
        ("1K", 1024),
        ("64k", 65536),
        ("1KiB", 1024),
        ("4MiB", 4 * 1024 * 1024),
        ("2mib", 2 * 1024 * 1024),
        ("1M", 1 << 20),
        ("1G", 1 << 30),
        ("2147483647", 2**31 - 1),
        ("10KB", 10_000),
        ("1MB", 1_000_000),
        ("2gb", 2_000_000_000),
        ("8 KiB", 8192),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    "text", ["", "-1", "-4K", "1.5M", "4 MiBs", "K", "1T", "12x", "0x10", "\u0661\u0662"]
)
def test_parse_size_rejects_garbage_naming_text_and_forms(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_size(text)
    message = str(info.value)
    assert repr(text) in message
    assert "4MiB" in message and "1MB" in message
    assert info.value.exit_code == 2


@pytest.mark.parametrize("text", ["2GiB", "3GiB", "16GiB", "9223372036854775808", "9" * 5000])
def test_parse_size_refuses_sizes_beyond_one_message_naming_the_option(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_size(text, "--sizes")
    message = str(info.value)
    assert message.startswith("--sizes: size ") and "\n" not in message
    assert len(message) < 300 and info.value.exit_code == 2


def test_parse_size_takes_a_larger_limit_where_one_is_stated() -> None:
    assert parse_size("3GiB", most=1 << 40) == 3 << 30


def test_parse_size_list_sorts_and_deduplicates() -> None:
    assert parse_size_list("1MiB,8,0,1K,1024, 8") == [0, 8, 1024, 1 << 20]


@pytest.mark.parametrize("text", ["", " , ", "8,,16", "8,x"])
def test_parse_size_list_rejects_bad_lists(text: str) -> None:
    with pytest.raises(UsageError):
        parse_size_list(text)


def test_bases_alternate_four_thirds_and_three_halves() -> None:
    assert netpipe_bases(100) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96]
    bases = netpipe_bases(1 << 20)
    ratios = [b / a for a, b in zip(bases[2:], bases[3:], strict=False)]
    assert ratios[0::2] == [pytest.approx(4 / 3)] * len(ratios[0::2])
    assert ratios[1::2] == [pytest.approx(3 / 2)] * len(ratios[1::2])


def test_schedule_starts_densely_and_is_sorted_unique() -> None:
    sizes = netpipe_schedule(1 << 20)
    assert sizes[:10] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert sizes == sorted(set(sizes))


def test_schedule_perturbs_each_base() -> None:
    sizes = set(netpipe_schedule(4096, perturbation=3))
    for base in netpipe_bases(4096):
        assert base in sizes
        if base > 3:
            assert base - 3 in sizes
        if base + 3 <= 4096:
            assert base + 3 in sizes
    # Nothing else: every size is zero, the maximum, or within 3 of a base.
    bases = netpipe_bases(4096)
    for size in sizes - {0, 4096}:
        assert any(size - base in (-3, 0, 3) for base in bases), size
    assert {1021, 1024, 1027, 1533, 1536, 1539} <= sizes
    assert 1025 not in sizes


def test_schedule_bounds_and_maximum() -> None:
    sizes = netpipe_schedule(1000)
    assert sizes[-1] == 1000
    assert 768 + 3 in sizes and 1024 - 3 not in sizes
    assert min(netpipe_schedule(1000, include_zero=False)) == 1
    assert all(0 <= s <= 1000 for s in sizes)


def test_schedule_without_perturbation_is_the_bases() -> None:
    assert netpipe_schedule(64, perturbation=0) == [0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
    assert netpipe_schedule(100, perturbation=0, include_zero=False) == netpipe_bases(100) + [100]


def test_schedule_tiny_maxima() -> None:
    assert netpipe_schedule(0) == [0]
    assert netpipe_schedule(1) == [0, 1]
    assert netpipe_schedule(5) == [0, 1, 2, 3, 4, 5]


@pytest.mark.parametrize(("max_bytes", "perturbation"), [(-1, 3), (1024, -1)])
def test_schedule_rejects_negative_input(max_bytes: int, perturbation: int) -> None:
    with pytest.raises(UsageError):
        netpipe_schedule(max_bytes, perturbation)
