"""Pure numeric statistics: pass@k families, Beta quantiles, intervals, paired tests, planning.

Imports nothing heavy: numpy is imported inside the functions that need it (Monte Carlo, bootstrap,
permutation), and scipy is never needed.
"""

from assay.stats._beta import beta_cdf, beta_interval, beta_ppf, normal_ppf, t_ppf
from assay.stats._passk import (
    BayesianMode,
    FrequentistMode,
    PassK,
    StatisticalMode,
    pass_at_k,
    pass_pow_k,
    quality_assessment,
)

__all__ = [
    "BayesianMode",
    "FrequentistMode",
    "PassK",
    "StatisticalMode",
    "beta_cdf",
    "beta_interval",
    "beta_ppf",
    "normal_ppf",
    "pass_at_k",
    "pass_pow_k",
    "quality_assessment",
    "t_ppf",
]
