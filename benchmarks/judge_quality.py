"""Judge quality: agreement of a judge's verdicts with a labelled development set.

For each metric, scores every item of the set with the given judge and prints Cohen's kappa
(and quadratic-weighted kappa on ordinal scales), exact accuracy, pass/fail accuracy (score >=
threshold on both sides), MAE of the score against the label's score, per-label recall, the
confusion matrix (rows the label, columns the judge's label), hallucination precision beside
recall and the share of other items called hallucination, figures per writer, errored items,
judge calls (per item too), prompt/completion tokens, seconds per item, the load average and,
for an in-process judge, the share of each call's static prompt (the rubric) and of all prompt
tokens that llama.cpp reused from its cache.

    python benchmarks/judge_quality.py --judge local:/path/model.gguf [--set devset|templates]
        [--metric failure_rate ...] [--half tuning|heldback] [--per-label 2] [--threads 2]
        [--max-tokens 512] [--prompt-style compact] [--ordinal-order natural] [--dump items.jsonl]
        [--match REGEX] [--devset-root DIR] [--logprobs N] [--thresholds FILE]

The sets. ``devset`` (``benchmarks/devset/``, read by ``devset_load``): conversations written by
six writers in their own voices and labelled twice, for failure_rate and goal_achievement_rate;
its halves are by writer (tuning = A, C, E; held-back = B, D, F), so no phrasing crosses them.
It is the default once its files are there. ``written``: every item of it by its writer's label
alone, before the second labelling (a shape check, not figures to report). ``templates``
(``judge_quality_set``): the earlier set assembled from hand-written scenarios, for all four
judge metrics; its halves are by scenario and share their phrasing. Both halves are scored and
reported side by side, and a prompt change is judged on the held-back column; ``--half`` scores
one. ``--per-label N`` keeps the first N items of each label in each half (a stratified subset
that fits a slow machine; on the written set taken from the writers in turn); item counts are
printed with the figures.

``--logprobs N`` asks the judge for token log-probabilities, so ``--dump`` shows each yes/no
answer's P(yes) (``details["p"]``, and per reply in failure_rate's findings); ``--thresholds FILE``
(the TOML block ``fit_thresholds.py`` writes: ``[judge.thresholds]``, and ``[judge] logprobs``)
decides those answers by the fitted thresholds: how the held-back half is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import devset_load  # noqa: E402
import judge_quality_set  # noqa: E402
from judge_quality_set import HALVES, ORDINAL  # noqa: E402

from assay import evaluate  # noqa: E402
from assay.judge import JudgeCache, make_judge, ordinal_order, prompt_style  # noqa: E402
from assay.stats import confusion_matrix  # noqa: E402

THRESHOLD = 0.7


def predicted_label(metric: str, details: dict[str, Any]) -> str | None:
    """The judge's label for one result: its verdict, or its raw 1-5 score."""
    for d in (details, *(details.get("per_turn_details") or [])):
        if "verdict" in d:
            return str(d["verdict"])
        if "raw_score" in d:
            return str(d["raw_score"])
    return None


def kappa(truth: list[str], pred: list[str], labels: list[str], weights: str | None = None) -> float:
    """Cohen's kappa; ``weights="quadratic"`` for the ordinal form (labels in scale order)."""
    n, k = len(truth), len(labels)
    if n == 0:
        return float("nan")
    index = {lab: i for i, lab in enumerate(labels)}
    observed = [[0.0] * k for _ in range(k)]
    for t, p in zip(truth, pred):
        observed[index[t]][index[p]] += 1
    rows = [sum(r) for r in observed]
    cols = [sum(observed[i][j] for i in range(k)) for j in range(k)]

    def w(i: int, j: int) -> float:
        if weights == "quadratic":
            return ((i - j) / (k - 1)) ** 2 if k > 1 else 0.0
        return 0.0 if i == j else 1.0

    obs = sum(w(i, j) * observed[i][j] for i in range(k) for j in range(k)) / n
    exp = sum(w(i, j) * rows[i] * cols[j] for i in range(k) for j in range(k)) / (n * n)
    return 1.0 - obs / exp if exp else float("nan")


def subset(data: list[dict[str, Any]], per_label: int | None) -> list[dict[str, Any]]:
    """The first *per_label* items of each label; on the written set, taken from its writers in turn."""
    if per_label is None:
        return data
    if data and all("writer" in i for i in data):
        rank: Counter[tuple[str, str]] = Counter()
        keyed = []
        for n, item in enumerate(data):
            key = (item["label"], item["writer"])
            keyed.append((rank[key], n, item))
            rank[key] += 1
        data = [item for _, _, item in sorted(keyed, key=lambda k: (k[0], k[1]))]
    seen: Counter[str] = Counter()
    out = []
    for item in data:
        if seen[item["label"]] < per_label:
            seen[item["label"]] += 1
            out.append(item)
    return out


def watch_prompts(backend: Any) -> list[tuple[str, int, int]] | None:
    """For an in-process judge: (system message, prompt tokens, reused tokens) of every call."""
    run = getattr(backend, "_run", None)
    if getattr(backend, "backend", None) != "local" or run is None:
        return None
    calls: list[tuple[str, int, int]] = []

    def watched(params: dict[str, Any]) -> Any:
        reply = run(params)
        usage = reply.get("usage") or {} if isinstance(reply, dict) else {}
        calls.append((params["messages"][0]["content"], int(usage.get("prompt_tokens") or 0),
                      int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)))
        return reply

    backend._run = watched
    return calls


def static_reuse(backend: Any, calls: list[tuple[str, int, int]]) -> float:
    """The share of each call's static prompt (its system message: the rubric) that llama.cpp
    reused from the previous call, averaged over every call but the first of each prompt.

    The static part's length is measured after the run, as the prompt tokens of the system
    message with an empty user message (less the user turn's own 3 template tokens).
    """
    static: dict[str, int] = {}
    for system, _, _ in calls:
        if system not in static:
            probe = backend._run({"messages": [{"role": "system", "content": system}, {"role": "user", "content": ""}],
                                  "max_tokens": 1, "temperature": 0})
            static[system] = max(1, int((probe.get("usage") or {}).get("prompt_tokens") or 1) - 3)
    seen: set[str] = set()
    shares = []
    for system, _, cached in calls:
        if system in seen:
            shares.append(min(cached, static[system]) / static[system])
        seen.add(system)
    return sum(shares) / len(shares) if shares else float("nan")


def set_items(name: str, metric: str, half: str | None, root: Path | None = None) -> list[dict[str, Any]]:
    """The labelled items of one set: ``devset`` (the written set's agreed items), ``written`` (all
    its valid items with the writers' labels, before the second labelling) or ``templates``."""
    if name in ("devset", "written"):
        return devset_load.items(metric, half, root or devset_load.ROOT, written=name == "written")
    return judge_quality_set.items(metric, half)


def figures(metric: str, rows: list[tuple[dict[str, Any], str | None, float | None]],
            labels: list[str]) -> dict[str, Any]:
    """Agreement of the judge with the labels over *rows*: (item, the judge's label, its score);
    a label of None (or one outside *labels*) is an errored item, counted apart.

    ``confusion``: rows the true label, columns the judge's, in *labels* order. ``hallucination``
    (failure_rate): recall (caught of the true ones), precision (true of those the judge called
    hallucination) and ``false_alarms`` (the other items called hallucination, of all other items).
    """
    truth, pred, abs_err, pass_ok, errors = [], [], [], 0, 0
    errored: Counter[str] = Counter()  # by true label
    recall: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # by kind: the label, or a template variant
    for item, label, score in rows:
        kind = item["label"] if "writer" in item else item["id"].rsplit("-", 1)[-1]  # fr-NN-false_fact
        recall[kind][1] += 1
        if score is None or label not in labels:
            errors += 1
            errored[item["label"]] += 1
            continue
        truth.append(item["label"])
        pred.append(label)
        recall[kind][0] += label == item["label"]
        abs_err.append(abs(score - item["score"]))
        pass_ok += (score >= THRESHOLD) == (item["score"] >= THRESHOLD)
    scored = len(truth)
    out: dict[str, Any] = {
        "items": len(rows), "errored": errors, "kappa": kappa(truth, pred, labels),
        "exact": sum(t == p for t, p in zip(truth, pred)) / scored if scored else float("nan"),
        "pass_fail": pass_ok / scored if scored else float("nan"),
        "mae": sum(abs_err) / scored if scored else float("nan"),
        "recall": {lab: f"{hit}/{n}" for lab, (hit, n) in sorted(recall.items())},
        "chosen": dict(Counter(pred)), "confusion": confusion_matrix(truth, pred, labels),
        "errored_by_label": [errored[lab] for lab in labels],
    }
    if metric in ORDINAL:
        out["weighted_kappa"] = kappa(truth, pred, labels, "quadratic")
    if "hallucination" in labels:
        true_h = sum(t == "hallucination" for t in truth)
        called = sum(p == "hallucination" for p in pred)
        hit = sum(t == p == "hallucination" for t, p in zip(truth, pred))
        others = scored - true_h
        out["hallucination"] = {
            "recall": f"{hit}/{true_h}", "precision": f"{hit}/{called}",
            "false_alarms": f"{called - hit}/{others}",
            "false_alarm_share": (called - hit) / others if others else float("nan")}
    return out


def run_metric(metric: str, judge_spec: str, options: dict[str, Any], per_label: int | None,
               half: str | None = None, dump: Any = None, match: str | None = None,
               set_name: str = "templates", root: Path | None = None, cache: Any = False) -> dict[str, Any]:
    data = subset([i for i in set_items(set_name, metric, half, root) if match is None or re.search(match, i["id"])],
                  per_label)
    judge = make_judge(judge_spec, cache=cache, **options)
    backend = judge
    while hasattr(backend, "inner"):
        backend = backend.inner
    traces = [{k: v for k, v in item.items() if k not in ("label", "score", "note", "writer")} for item in data]
    calls = watch_prompts(backend)
    started = time.perf_counter()
    result = evaluate(traces, [metric], judge=judge)
    seconds = time.perf_counter() - started
    labels = sorted({i["label"] for i in data}) if metric not in ORDINAL else ORDINAL[metric]
    if set_name in ("devset", "written"):
        labels = devset_load.labels_of(metric)
    positions: Counter[int] = Counter()
    rows: list[tuple[dict[str, Any], str | None, float | None]] = []
    for item, tr in zip(data, result.traces):
        r = tr.metrics[metric]
        label = predicted_label(metric, r.details) if r.score is not None else None
        rows.append((item, label, r.score))
        if dump is not None:  # one line per item: what the judge answered, for reading the misses
            dump.write(json.dumps({"metric": metric, "half": half, "id": item["id"], "label": item["label"],
                                   "writer": item.get("writer"), "predicted": label, "score": r.score,
                                   "details": r.details}, default=str) + "\n")
            dump.flush()
        shown = (r.details.get("option_order") or {}).get("verdict")
        if r.score is not None and isinstance(shown, list) and label in shown:  # where the chosen label stood
            positions[shown.index(label) + 1] += 1
    stats = judge.stats
    out = figures(metric, rows, labels)
    out.update({
        "labels": labels, "positions": dict(sorted(positions.items())), "calls": stats.calls,
        "calls_per_item": stats.calls / len(data) if data else float("nan"), "prompt_tokens": stats.input_tokens,
        "completion_tokens": stats.output_tokens, "s_per_item": seconds / len(data) if data else 0.0,
        "load": os.getloadavg()[0],
    })
    writers = sorted({i["writer"] for i in data if "writer" in i})
    out["writers"] = {w: figures(metric, [r for r in rows if r[0].get("writer") == w], labels) for w in writers}
    if calls:
        out["static_reused"] = static_reuse(backend, calls)
    prompt, cached = getattr(backend, "prompt_tokens", 0), getattr(backend, "cached_prompt_tokens", 0)
    if prompt:
        # llama.cpp's KV-cache counter: prompt tokens not recomputed because the previous prompt
        # began the same way (the static rubric). The first call has nothing to reuse.
        out["prompt_reused"] = cached / prompt
        out["prompt_per_call"] = prompt / max(1, stats.calls)
        out["reused_per_call"] = cached / max(1, stats.calls - 1)
    return out


def _cell(v: Any, width: int = 12) -> str:
    return f"{v:>{width}.3f}" if isinstance(v, float) else f"{str(v):>{width}}"


def render(metric: str, got: dict[str, dict[str, Any]], header: str) -> str:
    """The report of one metric: both halves side by side, then per half the confusion matrix
    and the figures per writer."""
    lines = [f"\n{metric}  ({header})", f"  {'':20} " + "".join(f"{h:>12}" for h in got)]
    for key in ("items", "kappa", "weighted_kappa", "exact", "pass_fail", "mae", "errored", "calls",
                "calls_per_item", "prompt_tokens", "completion_tokens", "s_per_item", "load", "static_reused",
                "prompt_reused", "prompt_per_call", "reused_per_call"):
        if any(key in g for g in got.values()):
            lines.append(f"  {key:20} " + "".join(_cell(g.get(key)) for g in got.values()))
    if any("hallucination" in g for g in got.values()):
        for key, name in (("recall", "halluc. recall"), ("precision", "halluc. precision"),
                          ("false_alarms", "others as halluc."), ("false_alarm_share", "... share")):
            lines.append(f"  {name:20} " + "".join(_cell(g["hallucination"][key]) for g in got.values()))
    for key in ("recall", "chosen", "positions"):
        for h, g in got.items():
            lines.append(f"  {key + ' (' + h + ')':18} {g[key]}")
    for h, g in got.items():
        labels = g["labels"]
        width = max(len(lab) for lab in labels) + 2
        lines.append(f"  confusion ({h}): rows the label, columns the judge's label; its errored items apart")
        lines.append(f"    {'':{width}}" + "".join(f"{lab[:10]:>11}" for lab in labels) + f"{'errored':>11}")
        for lab, row, err in zip(labels, g["confusion"], g["errored_by_label"]):
            lines.append(f"    {lab:{width}}" + "".join(f"{n:>11}" for n in row) + f"{err:>11}")
        if g["writers"]:
            cols = [("items", 6), ("kappa", 7)] + ([("w.kappa", 8)] if metric in ORDINAL else []) + [
                ("exact", 7), ("pass/fail", 10), ("MAE", 7), ("errored", 8)]
            if "hallucination" in g:
                cols += [("h.recall", 9), ("h.precision", 12), ("others as h.", 13)]
            lines.append(f"  {'per writer (' + h + ')':22}" + "".join(f"{name:>{w}}" for name, w in cols))
            for writer, f in g["writers"].items():
                hf = f.get("hallucination", {})
                values = {"items": f["items"], "kappa": f["kappa"], "w.kappa": f.get("weighted_kappa"),
                          "exact": f["exact"], "pass/fail": f["pass_fail"], "MAE": f["mae"], "errored": f["errored"],
                          "h.recall": hf.get("recall"), "h.precision": hf.get("precision"),
                          "others as h.": hf.get("false_alarms")}
                lines.append(f"    {'W' + writer:20}" + "".join(
                    f"{values[name]:>{w}.{3 if name == 'MAE' else 2}f}" if isinstance(values[name], float)
                    else f"{str(values[name]):>{w}}" for name, w in cols))
    return "\n".join(lines)


def read_thresholds(path: Path) -> dict[str, Any]:
    """``thresholds`` (and ``logprobs``, when given) from a TOML file's ``[judge]`` table."""
    import tomllib

    table = tomllib.loads(path.read_text(encoding="utf-8")).get("judge") or {}
    if not table.get("thresholds"):
        raise SystemExit(f"{path}: no [judge.thresholds] table")
    return {k: table[k] for k in ("thresholds", "logprobs") if k in table}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", required=True, help="e.g. local:/models/qwen2.5-1.5b-instruct-q4_k_m.gguf")
    parser.add_argument("--set", dest="set_name", choices=["devset", "written", "templates"], default=None,
                        help="devset: the written development set's agreed items (default once benchmarks/devset/ "
                             "holds it); written: all its items by the writers' labels alone (before the second "
                             "labelling: not figures to report); templates: the earlier template set")
    parser.add_argument("--devset-root", type=Path, default=None,
                        help=f"where the written set lies (default {devset_load.ROOT})")
    parser.add_argument("--metric", action="append", choices=["failure_rate", "goal_achievement_rate",
                                                              "answer_relevance", "accuracy"])
    parser.add_argument("--half", choices=list(HALVES), default=None,
                        help="score one half of the set (default: both, side by side)")
    parser.add_argument("--per-label", type=int, default=None, help="first N items of each label only")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads of a local judge")
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--prompt-style", choices=["auto", "full", "compact"], default=None)
    parser.add_argument("--ordinal-order", choices=["auto", "natural", "reversed", "shuffled"], default=None)
    parser.add_argument("--dump", type=Path, default=None,
                        help="write one JSON line per item (label, prediction, the judge's answers) to this file")
    parser.add_argument("--logprobs", type=int, default=None,
                        help="ask the judge for token log-probabilities, N alternatives per token")
    parser.add_argument("--thresholds", type=Path, default=None,
                        help="a TOML file with [judge.thresholds] (fit_thresholds.py --out): decide yes/no answers "
                             "by them (implies --logprobs)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="a verdict cache file: a rerun (with --thresholds, say) asks the judge only what "
                             "the cache lacks; calls and seconds per item then count the new calls only")
    parser.add_argument("--match", default=None, help="only items whose id matches this regular expression "
                        "(e.g. 'false_fact|hallucination')")
    args = parser.parse_args(argv)
    root = args.devset_root or devset_load.ROOT
    set_name = args.set_name or ("devset" if devset_load.present(root) else "templates")
    if args.set_name is None:
        print(f"set: {set_name}" + ("" if set_name == "devset" else f" (no written set under {root} yet)"), flush=True)
    metrics = args.metric or (list(devset_load.METRICS) if set_name != "templates" else
                              ["failure_rate", "goal_achievement_rate", "answer_relevance", "accuracy"])
    if set_name != "templates" and set(metrics) - set(devset_load.METRICS):
        parser.error(f"the written set labels {', '.join(devset_load.METRICS)} only; use --set templates for "
                     f"{', '.join(sorted(set(metrics) - set(devset_load.METRICS)))}")
    dump = args.dump.open("w", encoding="utf-8") if args.dump else None
    options: dict[str, Any] = {}
    if args.prompt_style:
        options["prompt_style"] = args.prompt_style
    if args.ordinal_order:
        options["ordinal_order"] = args.ordinal_order
    if args.threads:
        options["threads"] = args.threads
    if args.max_tokens:
        options["max_tokens"] = args.max_tokens
    if args.concurrency:
        options["concurrency"] = args.concurrency
    if args.logprobs:
        options["logprobs"] = args.logprobs
    if args.thresholds:
        options.update(read_thresholds(args.thresholds))
        options.setdefault("logprobs", 10)
        print(f"thresholds from {args.thresholds}: {options['thresholds']}", flush=True)
    halves = [args.half] if args.half else list(HALVES)
    cache = JudgeCache(args.cache) if args.cache else False
    for metric in metrics:
        got = {h: run_metric(metric, args.judge, options, args.per_label, h, dump, args.match, set_name, root, cache)
               for h in halves}
        judge = make_judge(args.judge, cache=False, dry_run=True, **{k: v for k, v in options.items()
                                                                      if k in ("prompt_style", "ordinal_order")})
        counts = ", ".join(f"{h} {g['items']}" for h, g in got.items())
        print(render(metric, got, f"set {set_name}; items: {counts}; judge {args.judge}, prompt style "
                                  f"{prompt_style(judge)}, ordinal order {ordinal_order(judge)}, load average "
                                  f"{os.getloadavg()[0]:.1f}"), flush=True)
    if dump is not None:
        dump.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
