import math
import warnings

import numpy as np
import pytest

from commscope.analysis import stats

SAMPLE = [1.0, 2.0, 3.0, 4.0, 5.0]
# Student t quantile t(0.975, df=4), from printed tables.
T_975_DF4 = 2.776445105


def test_basic_moments_by_hand() -> None:
    assert stats.mean(SAMPLE) == 3.0
    # Squared deviations 4+1+0+1+4 = 10, over n-1 = 4.
    assert stats.std(SAMPLE) == pytest.approx(math.sqrt(2.5))
    assert stats.standard_error(SAMPLE) == pytest.approx(math.sqrt(2.5) / math.sqrt(5))
    assert stats.relative_standard_error(SAMPLE) == pytest.approx(math.sqrt(0.5) / 3)
    assert stats.median([5.0, 1.0, 4.0, 2.0]) == 3.0


def test_percentile_interpolates() -> None:
    assert stats.percentile(SAMPLE, 50) == 3.0
    assert stats.percentile(SAMPLE, 90) == pytest.approx(4.6)
    assert stats.percentile(SAMPLE, 0) == 1.0
    with pytest.raises(ValueError):
        stats.percentile(SAMPLE, 101)


def test_confidence_interval_uses_student_t() -> None:
    low, high = stats.confidence_interval(SAMPLE, 0.95)
    half = T_975_DF4 * math.sqrt(0.5)  # 1.963243...
    assert low == pytest.approx(3.0 - half, rel=1e-8)
    assert high == pytest.approx(3.0 + half, rel=1e-8)
    assert half == pytest.approx(1.963243, abs=1e-6)


def test_wider_level_gives_wider_interval() -> None:
    low90, high90 = stats.confidence_interval(SAMPLE, 0.90)
    low99, high99 = stats.confidence_interval(SAMPLE, 0.99)
    assert low99 < low90 < 3.0 < high90 < high99


def test_trimmed_drops_floor_n_fraction_from_each_end() -> None:
    values = [10.0, 1.0, 9.0, 2.0, 8.0, 3.0, 7.0, 4.0, 6.0, 5.0]
    assert list(stats.trimmed(values, 0.1)) == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    assert list(stats.trimmed(values, 0.25)) == [3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    # floor(9 * 0.1) = 0: nothing dropped.
    assert len(stats.trimmed(values[:9], 0.1)) == 9
    # 100 * 0.29 is 28.999999999999996 in binary floating point; the intent is 29.
    assert len(stats.trimmed(np.arange(100.0), 0.29)) == 100 - 2 * 29
    assert list(stats.trimmed(values, 0.0)) == sorted(values)


@pytest.mark.parametrize("fraction", [-0.1, 0.5, 0.7])
def test_trimmed_rejects_bad_fraction(fraction: float) -> None:
    with pytest.raises(ValueError):
        stats.trimmed(SAMPLE, fraction)


def test_summarize_after_trimming() -> None:
    values = [100.0, 1.0, 2.0, 3.0, 4.0, 5.0, -50.0, 3.0, 3.0, 3.0]
    s = stats.summarize(values, level=0.95, trim=0.1)
    kept = [1.0, 2.0, 3.0, 3.0, 3.0, 3.0, 4.0, 5.0]
    assert s.n == 8
    assert s.min == 1.0 and s.max == 5.0
    assert s.mean == pytest.approx(3.0)
    assert s.median == 3.0
    assert s.se == pytest.approx(np.std(kept, ddof=1) / math.sqrt(8))
    assert (s.ci_low, s.ci_high) == pytest.approx(stats.confidence_interval(kept, 0.95))
    assert s.level == 0.95
    assert s.rse == pytest.approx(s.se / 3.0)


def test_single_value_without_warnings() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = stats.summarize([2.5])
        assert math.isnan(stats.std([2.5]))
        assert math.isnan(stats.relative_standard_error([2.5]))
    assert s.n == 1
    assert s.mean == 2.5
    assert math.isnan(s.se)
    assert (s.ci_low, s.ci_high) == (2.5, 2.5)


def test_constant_sample_has_zero_width_interval() -> None:
    assert stats.confidence_interval([4.0, 4.0, 4.0]) == (4.0, 4.0)
    assert stats.relative_standard_error([4.0, 4.0]) == 0.0


def test_zero_mean_rse_is_nan() -> None:
    assert math.isnan(stats.relative_standard_error([-1.0, 1.0]))


@pytest.mark.parametrize("bad", [[], [[1.0, 2.0]]])
def test_empty_or_nested_input_rejected(bad: list) -> None:
    with pytest.raises(ValueError):
        stats.mean(bad)


@pytest.mark.parametrize("level", [0.0, 1.0, 95])
def test_bad_level_rejected(level: float) -> None:
    with pytest.raises(ValueError):
        stats.confidence_interval(SAMPLE, level)
