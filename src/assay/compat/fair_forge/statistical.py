"""Fair Forge's statistical modes (``fair_forge.statistical``): assay's, unchanged.

``BayesianMode(mc_samples=5000, ci_level=0.95, beta_prior_a=1.0, beta_prior_b=1.0)`` takes the
arguments of Fair Forge's; by default it computes posterior means and credible intervals exactly (for
7 of 10 and k=3: pass@3 0.9451 [0.7733, 0.9987], pass^3 0.3297 [0.0594, 0.7067]);
``method="monte_carlo"`` samples ``mc_samples`` draws instead, seeded.
"""

from ...stats import BayesianMode, FrequentistMode, PassK, StatisticalMode

__all__ = ["BayesianMode", "FrequentistMode", "PassK", "StatisticalMode"]
