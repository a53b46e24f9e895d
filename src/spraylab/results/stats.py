"""Mean and 95% confidence interval over a few repetitions (seeds), without scipy.

The interval is the Student-t one, ``mean ± t(0.975, n-1) · s / √n``, with the two-sided 95%
critical values tabulated below (exact to three decimals for df ≤ 30; between table entries the
value is interpolated linearly in 1/df, which is accurate to better than 0.001)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

# Two-sided 95% critical values of Student's t: df → t(0.975, df).
T95: dict[int, float] = {
    1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
    10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
    18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060,
    26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 50: 2.009, 60: 2.000,
    80: 1.990, 100: 1.984, 120: 1.980, 1000: 1.962,
}  # fmt: skip
Z95 = 1.960
# Fewest values a shown confidence interval is computed from: with two, Student's t is 12.7 and
# the interval (12.7 standard errors wide) says nothing. Plots and tables both follow it.
MIN_CI_N = 3


def t95(df: int) -> float:
    """The two-sided 95% Student-t critical value for ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df in T95:
        return T95[df]
    table = sorted(T95)
    if df > table[-1]:
        return Z95
    hi = next(d for d in table if d > df)
    lo = max(d for d in table if d < df)
    # interpolate in 1/df: t is very nearly linear in it
    w = (1 / lo - 1 / df) / (1 / lo - 1 / hi)
    return T95[lo] + w * (T95[hi] - T95[lo])


@dataclass(frozen=True)
class Estimate:
    """Mean of ``n`` values and the half-width of its 95% CI (``None`` when n < 2)."""

    mean: float | None
    half_width: float | None
    n: int

    @property
    def low(self) -> float | None:
        return None if self.mean is None or self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        return None if self.mean is None or self.half_width is None else self.mean + self.half_width


def shown_interval(est: Estimate, nonnegative: bool = True) -> tuple[float, float] | None:
    """The (low, high) 95% interval a report shows for ``est``: none under ``MIN_CI_N`` values,
    and for a quantity that cannot be negative the low end is cut at zero."""
    if est.mean is None or est.half_width is None or est.n < MIN_CI_N:
        return None
    low = est.mean - est.half_width
    if nonnegative and est.mean >= 0 > low:
        low = 0.0
    return low, est.mean + est.half_width


def mean_ci(values: Iterable[float | None]) -> Estimate:
    """Mean ± 95% CI of the finite values (``None`` and NaN are left out)."""
    xs = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not xs:
        return Estimate(None, None, 0)
    mean = statistics.fmean(xs)
    if len(xs) < 2:
        return Estimate(mean, None, 1)
    half = t95(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return Estimate(mean, half, len(xs))
