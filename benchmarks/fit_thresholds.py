"""Fit the compact form's yes/no decision thresholds on the written set's tuning half.

    python benchmarks/fit_thresholds.py --judge local:/models/qwen2.5-1.5b-instruct-q4_k_m.gguf --half tuning
        [--metric failure_rate ...] [--per-label N] [--threads 2] [--logprobs 10] [--out thresholds.toml]
        [--cache fit.sqlite3] [--devset-root DIR]

Scores the tuning half once with token log-probabilities on (``logprobs``), so every yes/no answer
of the compact sheets has its P(yes) (``details["p"]``). Then, question by question (coordinate
ascent, two passes), it tries thresholds from 0.05 to 0.95 and keeps the one that gives the
highest Cohen's kappa of the metric's labels against the set's (ties: the exact share, then the
threshold nearest 0.5, with the greedy answer counting as 0.5, so nothing changes without a gain). Each try re-scores the half with the
thresholds set on the judge: the verdicts come from the verdict cache, and only a call that a
flipped answer newly needs (the judge's own answer after a sheet now says "answers", the delivery
sheet after "satisfied" turns no) goes to the judge, once. It prints each question's threshold,
the figures before and after, and a TOML block for assay.toml; ``--out`` writes that block, which
``judge_quality.py --thresholds FILE`` reads to measure the held-back half.

The held-back half is never fitted on: ``--half heldback`` is refused.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import devset_load  # noqa: E402
from judge_quality import figures, predicted_label, subset  # noqa: E402

from assay import evaluate  # noqa: E402
from assay.judge import JudgeCache, make_judge, prompt_style  # noqa: E402
from assay.metrics.eval_lib import FailureRate, GoalAchievementRate  # noqa: E402

QUESTIONS: dict[str, tuple[str, ...]] = {"failure_rate": FailureRate.threshold_questions,
                                         "goal_achievement_rate": GoalAchievementRate.threshold_questions}
"""The yes/no questions whose answers decide each metric's label, as the metrics declare them
(``threshold_questions``; goal's ``got_everything`` is asked on both sheets: ``delivery.got_everything`` is
the delivery sheet's own, fitted after the shared one)."""
GRID = tuple(round(0.05 * i, 2) for i in range(1, 20))


def score(judge: Any, metric: str, data: list[dict[str, Any]], thresholds: dict[str, float]) -> list[tuple]:
    """(item, the judge's label, score, details) per item with *thresholds* set on the judge."""
    judge.answer_thresholds = {f"{metric}.{q}": t for q, t in thresholds.items()}
    traces = [{k: v for k, v in item.items() if k not in ("label", "score", "note", "writer")} for item in data]
    result = evaluate(traces, [metric], judge=judge)
    rows = []
    for item, tr in zip(data, result.traces):
        r = tr.metrics[metric]
        rows.append((item, predicted_label(metric, r.details) if r.score is not None else None, r.score, r.details))
    return rows


def quality(metric: str, rows: list[tuple]) -> dict[str, Any]:
    return figures(metric, [r[:3] for r in rows], devset_load.labels_of(metric))


def _key(f: dict[str, Any], threshold: float | None) -> tuple[float, float, float]:
    """Kappa, then the exact share, then the threshold nearest 0.5 (greedy counts as 0.5): among equal
    figures the least departure from the judge's own answer."""
    k, e = f["kappa"], f["exact"]
    return (k if k == k else -2.0, e if e == e else -1.0,  # NaN (nothing scored) ranks last
            -abs((0.5 if threshold is None else threshold) - 0.5))


def fit(judge: Any, metric: str, data: list[dict[str, Any]], passes: int = 2,
        grid: tuple[float, ...] = GRID, log: Any = print) -> tuple[dict[str, float], dict[str, Any], dict[str, Any]]:
    """The thresholds (question -> p) that maximise the metric's kappa on *data*; with the figures
    before (greedy answers) and after."""
    before = quality(metric, score(judge, metric, data, {}))
    chosen: dict[str, float] = {}
    best = before
    for n in range(passes):
        changed = False
        for question in QUESTIONS[metric]:
            current = chosen.get(question)
            for t in grid:
                if t == current:
                    continue
                trial = {**chosen, question: t}
                f = quality(metric, score(judge, metric, data, trial))
                if _key(f, t) > _key(best, chosen.get(question)):
                    best, chosen, changed = f, trial, True
            log(f"  pass {n + 1}: {question:15} -> {chosen.get(question, 'greedy')!s:7} kappa {best['kappa']:.3f}")
        if not changed:
            break
    judge.answer_thresholds = {}
    return chosen, before, best


def toml_block(thresholds: dict[str, dict[str, float]], logprobs: int) -> str:
    lines = ["[judge]", f"logprobs = {logprobs}", "", "[judge.thresholds]"]
    for metric, table in thresholds.items():
        lines += [f'"{metric}.{q}" = {t:g}' for q, t in table.items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", required=True, help="a judge that returns token log-probabilities: "
                        "local:PATH.gguf or an OpenAI-compatible server (llama.cpp, vLLM)")
    parser.add_argument("--half", default="tuning",
                        help="tuning (the only half thresholds are fitted on)")
    parser.add_argument("--metric", action="append", choices=list(QUESTIONS))
    parser.add_argument("--per-label", type=int, default=None, help="first N items of each label only")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads of a local judge")
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--logprobs", type=int, default=10, help="alternatives per token (default 10)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="the verdict cache (default: a temporary file); a rerun with it costs no judge calls")
    parser.add_argument("--out", type=Path, default=None, help="write the TOML block to this file")
    parser.add_argument("--devset-root", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.half != "tuning":
        parser.error(f"--half {args.half}: thresholds are fitted on the tuning half only; the held-back half is "
                     "only measured (benchmarks/judge_quality.py --thresholds FILE --half heldback)")
    root = args.devset_root or devset_load.ROOT
    options: dict[str, Any] = {"logprobs": args.logprobs, "prompt_style": "compact"}
    for name in ("threads", "max_tokens", "concurrency"):
        if getattr(args, name):
            options[name] = getattr(args, name)
    with tempfile.TemporaryDirectory() as tmp:
        cache = JudgeCache(args.cache or Path(tmp) / "fit.sqlite3")
        judge = make_judge(args.judge, cache=cache, **options)
        if prompt_style(judge) != "compact":
            parser.error("thresholds apply to the compact form's yes/no questions")
        fitted: dict[str, dict[str, float]] = {}
        for metric in args.metric or list(QUESTIONS):
            data = subset(devset_load.items(metric, "tuning", root), args.per_label)
            started = time.perf_counter()
            first = score(judge, metric, data, {})
            seconds = time.perf_counter() - started
            with_p = sum(bool(r[3].get("p")) for r in first)
            print(f"\n{metric}: {len(data)} tuning items scored in {seconds:.0f} s; {with_p} with probabilities",
                  flush=True)
            if not with_p:
                print(f"  the judge {args.judge} returned no token probabilities: nothing to fit", file=sys.stderr)
                return 1
            chosen, before, after = fit(judge, metric, data)
            fitted[metric] = dict(sorted(chosen.items()))
            for name, f in (("greedy", before), ("thresholds", after)):
                print(f"  {name:11} kappa {f['kappa']:.3f}  exact {f['exact']:.3f}  pass/fail {f['pass_fail']:.3f}  "
                      f"MAE {f['mae']:.3f}  chosen {f['chosen']}", flush=True)
        cache.close()
    block = toml_block(fitted, args.logprobs)
    print("\n# fitted on the tuning half of the written set; paste into assay.toml\n" + block)
    if args.out:
        args.out.write_text(block, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
