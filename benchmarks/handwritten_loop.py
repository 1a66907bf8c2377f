"""The baseline assay has to beat: a plain script a user could write in 40 lines.

Reads a JSONL trace file, computes the five formulas of the small-trace benchmark
(tool_selection_accuracy, tool_sequence_correctness, parameter_quality, latency_score,
token_efficiency with the quality in metadata) and writes one JSON line per trace.

    python benchmarks/handwritten_loop.py traces.jsonl out.jsonl
"""

import json
import sys


def lcs(a, b):
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def score(t):
    calls = [c for turn in t["turns"] for c in turn.get("tool_calls", [])]
    exp = t["expected"]["tool_calls"]
    en, an = [c["name"] for c in exp], [c["name"] for c in calls]
    left = {}
    for n in en:
        left[n] = left.get(n, 0) + 1
    matched = 0
    for n in an:
        if left.get(n, 0):
            left[n] -= 1
            matched += 1
    union = len(en) + len(an) - matched
    selection = matched / union if union else 1.0
    sequence = lcs(en, an) / max(len(en), len(an)) if en or an else 1.0
    per_call, used = [], set()
    for e in exp:
        best = 0.0
        for i, c in enumerate(calls):
            if i not in used and c["name"] == e["name"]:
                ea, aa = e.get("arguments") or {}, c.get("arguments") or {}
                keys = ea.keys() | aa.keys()
                best = sum(ea.get(k) == aa.get(k) for k in ea if k in aa) / len(keys) if keys else 1.0
                used.add(i)
                break
        per_call.append(best)
    params = sum(per_call) / len(per_call) * min(1.0, len(exp) / len(calls)) if per_call and calls else 0.0
    latency = sum(turn.get("latency_ms", 0.0) for turn in t["turns"])
    latency_score = 1.0 if latency <= 2000.0 else 2000.0 / latency
    tokens = sum(turn["usage"]["input_tokens"] + turn["usage"]["output_tokens"] for turn in t["turns"])
    quality = t["metadata"]["quality_score"]
    efficiency = quality if tokens <= 1000 else quality / (tokens / 1000) ** 0.5
    return {"tool_selection_accuracy": selection, "tool_sequence_correctness": sequence,
            "parameter_quality": params, "latency_score": latency_score, "token_efficiency": efficiency}


def main(src, dst):
    with open(src, "rb") as f, open(dst, "w") as out:
        for line in f:
            t = json.loads(line)
            s = score(t)
            out.write(json.dumps({"id": t["id"], "scores": s, "passed": all(v >= 0.7 for v in s.values())}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
