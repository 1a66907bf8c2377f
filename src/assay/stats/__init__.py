"""Pure numeric statistics: pass@k families, Beta quantiles, intervals, paired tests, planning,
rater agreement (kappa, Krippendorff's alpha) and judge-corrected pass rates.

Two pass@k families, named in every result's ``family``:
- "per_conversation_plugin" (Fair Forge): p = c / n from one conversation's interactions, pushed
  through 1 - (1 - p)^k and p^k; ``FrequentistMode`` or ``BayesianMode`` (exact Beta posterior).
- "trial_unbiased" / "trial_bayesian" (Inspect AI style): n repeated trials of each task,
  unbiased combinatorial estimators (or per-task posteriors) averaged over tasks.

Anytime-valid comparisons (``SequentialComparison``, ``SequentialMean``: betting confidence
sequences; ``SignEProcess``: an e-process for win/loss counts) may be looked at after every batch.

Pairwise preferences: ``win_rate`` (with a task-clustered interval and sign test) and
``bradley_terry`` (strengths with bootstrap-over-tasks intervals).

Importing this package imports neither numpy nor scipy: Beta, normal and t quantiles are pure
Python; numpy (the ``stats`` extra) is imported inside the functions that resample or sample.
"""

from assay.stats._agreement import (
    Correction,
    cohen_kappa,
    confusion_matrix,
    corrected_pass_rate,
    krippendorff_alpha,
    rogan_gladen,
)
from assay.stats._beta import beta_cdf, beta_interval, beta_ppf, normal_ppf, t_ppf
from assay.stats._compare import Comparison, holm, min_p_value, paired_compare
from assay.stats._intervals import Interval, bounded_mean_interval, mean_interval, wilson_interval
from assay.stats._pairwise import Strengths, WinRate, bradley_terry, win_rate
from assay.stats._passk import (
    PER_CONVERSATION,
    BayesianMode,
    FrequentistMode,
    PassK,
    StatisticalMode,
    pass_at_k,
    pass_pow_k,
    quality_assessment,
)
from assay.stats._plan import (
    PairedPlan,
    TrialPlan,
    VarianceComponents,
    clustered_plan,
    iid_plan,
    plan_paired,
    trials_needed,
    variance_components,
)
from assay.stats._sequential import SequentialComparison, SequentialMean, SignEProcess
from assay.stats._trials import (
    TRIAL_BAYESIAN,
    TRIAL_UNBIASED,
    TrialPassK,
    trial_pass_k,
    unbiased_pass_at_k,
    unbiased_pass_pow_k,
)

__all__ = [
    "PER_CONVERSATION",
    "TRIAL_BAYESIAN",
    "TRIAL_UNBIASED",
    "BayesianMode",
    "Comparison",
    "Correction",
    "FrequentistMode",
    "Interval",
    "PairedPlan",
    "PassK",
    "SequentialComparison",
    "SequentialMean",
    "SignEProcess",
    "StatisticalMode",
    "Strengths",
    "TrialPassK",
    "TrialPlan",
    "VarianceComponents",
    "WinRate",
    "beta_cdf",
    "bounded_mean_interval",
    "bradley_terry",
    "beta_interval",
    "beta_ppf",
    "clustered_plan",
    "cohen_kappa",
    "confusion_matrix",
    "corrected_pass_rate",
    "holm",
    "iid_plan",
    "krippendorff_alpha",
    "mean_interval",
    "normal_ppf",
    "min_p_value",
    "paired_compare",
    "pass_at_k",
    "pass_pow_k",
    "plan_paired",
    "quality_assessment",
    "rogan_gladen",
    "t_ppf",
    "trial_pass_k",
    "trials_needed",
    "unbiased_pass_at_k",
    "unbiased_pass_pow_k",
    "variance_components",
    "wilson_interval",
    "win_rate",
]
