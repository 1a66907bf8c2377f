"""Beta, normal and t quantiles: closed forms, round trips, and scipy where it is installed."""

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from assay.stats import beta_cdf, beta_interval, beta_ppf, normal_ppf, t_ppf

probs = st.floats(min_value=1e-12, max_value=1 - 1e-12)
shapes = st.floats(min_value=0.01, max_value=1e4)


def close(x: float, ref: float, rel: float = 1e-10, abs_: float = 1e-13) -> bool:
    """Relative to the nearer end of [0, 1], so tails near 0 and near 1 are both held to account."""
    return abs(x - ref) <= max(abs_, rel * min(ref, 1.0 - ref))


@given(q=probs)
def test_uniform_quantile_is_q(q):
    assert close(beta_ppf(q, 1.0, 1.0), q)


@given(q=st.one_of(probs, st.floats(min_value=1e-300, max_value=1e-12)), a=st.floats(min_value=0.05, max_value=500))
def test_beta_a_1_quantile_is_q_to_the_1_over_a(q, a):
    assert close(beta_ppf(q, a, 1.0), q ** (1.0 / a), rel=1e-9)


@given(q=probs, b=st.floats(min_value=0.05, max_value=500))
def test_beta_1_b_quantile_mirrors(q, b):
    assert close(beta_ppf(q, 1.0, b), -math.expm1(math.log1p(-q) / b), rel=1e-9)


@given(q=st.floats(min_value=1e-9, max_value=1 - 1e-9))
def test_arcsine_quantile(q):
    assert close(beta_ppf(q, 0.5, 0.5), math.sin(math.pi * q / 2.0) ** 2, rel=1e-9)


@given(q=probs, a=shapes, b=shapes)
def test_cdf_inverts_ppf(q, a, b):
    x = beta_ppf(q, a, b)
    assert 0.0 <= x <= 1.0
    assume(1e-290 < x < 1.0)  # an underflowed quantile cannot round-trip
    # Within the CDF's own step across one float either side of x (it can be steep near 0 and 1).
    step = max(abs(beta_cdf(math.nextafter(x, t), a, b) - beta_cdf(x, a, b)) for t in (0.0, 1.0))
    assert abs(beta_cdf(x, a, b) - q) <= max(1e-9 * min(q, 1 - q), 2 * step)


@given(a=shapes, b=shapes, q1=probs, q2=probs)
def test_ppf_is_monotone(a, b, q1, q2):
    lo, hi = sorted((q1, q2))
    # Up to the solver's last-digit noise: quantiles of nearly equal q may swap by an ulp or two.
    assert beta_ppf(lo, a, b) <= beta_ppf(hi, a, b) * (1 + 1e-12) + 1e-300


@settings(max_examples=300, deadline=None)  # deadline: the first call imports scipy
@given(q=st.one_of(probs, st.floats(min_value=1e-30, max_value=1e-12)),  # scipy errs further out
       a=st.floats(min_value=0.01, max_value=1e5), b=st.floats(min_value=0.01, max_value=1e5))
def test_ppf_matches_scipy(q, a, b):
    special = pytest.importorskip("scipy.special")
    ref = float(special.betaincinv(a, b, q))
    assume(math.isfinite(ref))  # scipy gives nan in some far tails
    x = beta_ppf(q, a, b)
    if ref < 1e-300:  # both underflow; ours may stop at the smallest subnormal
        assert x < 1e-300
    elif not close(x, ref, rel=1e-9, abs_=1e-12):
        # scipy's inverse is not always the better root (Beta(a, a) at q = 0.5 is exactly 0.5; scipy
        # has given 0.5000000086): then ours must solve I_x(a, b) = q at least as well as scipy's.
        err = abs(float(special.betainc(a, b, x)) - q)
        assert err <= abs(float(special.betainc(a, b, ref)) - q) + 1e-15, (x, ref)


@settings(deadline=None)
@given(x=st.floats(min_value=1e-6, max_value=1 - 1e-6), a=shapes, b=shapes)
def test_cdf_matches_scipy(x, a, b):
    special = pytest.importorskip("scipy.special")
    assert beta_cdf(x, a, b) == pytest.approx(float(special.betainc(a, b, x)), rel=1e-9, abs=1e-14)


def test_reference_posterior_interval():
    # Beta(8, 4): the posterior after 7 of 10 with a uniform prior (seed 001).
    low, high = beta_interval(8, 4, 0.95)
    assert (round(low, 6), round(high, 6)) == (0.390257, 0.890737)
    assert (low, high) == pytest.approx((beta_ppf(0.025, 8, 4), beta_ppf(0.975, 8, 4)), rel=1e-14)


@pytest.mark.parametrize("x, expected", [(-1.0, 0.0), (0.0, 0.0), (1.0, 1.0), (2.0, 1.0)], ids=str)
def test_cdf_outside_the_unit_interval(x, expected):
    assert beta_cdf(x, 2.0, 3.0) == expected


def test_ppf_ends():
    assert (beta_ppf(0.0, 2.0, 3.0), beta_ppf(1.0, 2.0, 3.0)) == (0.0, 1.0)


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: beta_ppf(0.5, 0.0, 1.0), "a must be a finite number > 0, got 0.0"),
        (lambda: beta_ppf(0.5, 1.0, -2.0), "b must be a finite number > 0, got -2.0"),
        (lambda: beta_ppf(1.5, 1.0, 1.0), "q must be in [0, 1], got 1.5"),
        (lambda: beta_ppf(math.nan, 1.0, 1.0), "got nan"),
        (lambda: beta_cdf(math.nan, 1.0, 1.0), "got nan"),
        (lambda: beta_interval(1.0, 1.0, 1.0), "level must be in (0, 1), got 1.0"),
        (lambda: t_ppf(0.5, 0), "df must be > 0, got 0"),
        (lambda: normal_ppf(0.0), "q must be in (0, 1), got 0.0"),
    ],
    ids=["a", "b", "q", "q-nan", "x-nan", "level", "df", "normal"],
)
def test_bad_arguments_name_the_value(call, fragment):
    with pytest.raises(ValueError) as info:
        call()
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "q, df, expected",
    [
        (0.975, 1, math.tan(math.pi * 0.475)),  # Cauchy
        (0.975, 2, 0.95 / math.sqrt(2 * 0.975 * 0.025)),  # (2q - 1) / sqrt(2 q (1 - q))
        (0.025, 2, -0.95 / math.sqrt(2 * 0.975 * 0.025)),
        (0.5, 7, 0.0),
        (0.975, math.inf, 1.959963984540054),
    ],
    ids=["cauchy", "df2", "df2-lower", "median", "normal"],
)
def test_t_quantile_closed_forms(q, df, expected):
    assert t_ppf(q, df) == pytest.approx(expected, rel=1e-12, abs=1e-15)


@settings(deadline=None)
@given(q=st.floats(min_value=1e-6, max_value=1 - 1e-6), df=st.floats(min_value=0.5, max_value=1e6))
def test_t_quantile_matches_scipy(q, df):
    stats = pytest.importorskip("scipy.stats")
    assert t_ppf(q, df) == pytest.approx(float(stats.t.ppf(q, df)), rel=1e-9, abs=1e-12)


def test_normal_quantile():
    assert normal_ppf(0.975) == pytest.approx(1.959963984540054, rel=1e-15)
    assert normal_ppf(0.5) == 0.0
