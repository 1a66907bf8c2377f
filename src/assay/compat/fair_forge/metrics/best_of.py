"""``fair_forge.metrics.best_of``: the BestOf tournament (knockout bracket, contests judged pairwise)."""

from .._best_of import BestOf, BestOfJudgeError
from ..schemas.best_of import BestOfContest, BestOfMetric

__all__ = ["BestOf", "BestOfContest", "BestOfJudgeError", "BestOfMetric"]
