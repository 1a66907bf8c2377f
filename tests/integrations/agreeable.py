"""A judge that answers any verdict schema with a valid, agreeable instance ("yes", full marks).

The library metrics (RAGAS, DeepEval) send their own prompts and schemas; this judge fills each
schema from its JSON schema, so a test can drive a whole library metric without a model and
check what reached the judge.
"""

from __future__ import annotations

import json
from typing import Any

from assay.judge import JudgeRequest, Verdict

PREFERRED = ("yes", "1", "TP", "true", "attributed", "relevant")


class AgreeableJudge:
    model = "agreeable"

    def __init__(self, *, score: float = 1.0, fail: str | None = None) -> None:
        self.score, self.fail = score, fail
        self.requests: list[JudgeRequest] = []

    async def judge(self, request: JudgeRequest) -> Verdict:
        self.requests.append(request)
        name = request.schema.__name__
        if self.fail is not None and name == self.fail:
            return Verdict(parsed=None, raw="not json at all", model=self.model, error=f"scripted failure on {name}")
        schema = request.schema.model_json_schema()
        data = self._fill(schema, schema)
        parsed = request.schema.model_validate(data)
        return Verdict(parsed=parsed, raw=json.dumps(data), model=self.model, input_tokens=10, output_tokens=5,
                       cost_usd=0.0)

    def _fill(self, node: dict[str, Any], root: dict[str, Any]) -> Any:
        if "$ref" in node:
            return self._fill(root["$defs"][node["$ref"].rsplit("/", 1)[1]], root)
        if "anyOf" in node:
            options = [o for o in node["anyOf"] if o.get("type") != "null"]
            return self._fill(options[0], root) if options else None
        if "enum" in node:
            return next((v for v in node["enum"] if str(v) in PREFERRED), node["enum"][0])
        if "const" in node:
            return node["const"]
        kind = node.get("type")
        if kind == "object":
            props = node.get("properties", {})
            return {k: self._fill(v, root) for k, v in props.items()}
        if kind == "array":
            return [self._fill(node.get("items", {"type": "string"}), root)]
        if kind == "integer":
            return int(node.get("maximum", 1) if node.get("maximum") is not None else 1)
        if kind == "number":
            hi = node.get("maximum")
            return float(hi) * self.score if hi is not None else self.score
        if kind == "boolean":
            return True
        return "yes"
