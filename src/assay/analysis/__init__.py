"""Analyses of finished runs: compare two runs, plan a sample size, judge two runs pair by pair
(versus) or many in a tournament, and measure a judge against human labels (calibrate).

They read ``RunResult``s (and, for versus and tournaments, drive judge calls through the engine's
runner); the run core in ``assay.engine`` never imports them.
"""

from ._calibrate import Label, calibrate, correct_pass_rates, read_labels

__all__ = ["Label", "calibrate", "correct_pass_rates", "read_labels"]
