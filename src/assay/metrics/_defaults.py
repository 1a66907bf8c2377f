"""The default metric set: what ``evaluate(traces)`` and ``assay run`` score without a metric list.

An explicit, versioned list, so that a new built-in metric never silently joins everyone's
default set and shifts their overall scores. Adding to it (or removing from it) is a deliberate
change: bump DEFAULT_SET_VERSION and note it in CHANGELOG.md (a test pins both). Plugin and user
metrics never join it; select them by name. Judge metrics in it run only when a judge is
configured, and any metric only on traces that have the data it needs.
"""

DEFAULT_SET_VERSION = 1
"""Recorded in every run (``run["default_set"]``) when the default set was used."""

DEFAULT_METRICS: tuple[str, ...] = (
    "accuracy", "agent_tone", "agent_utilization", "answer_relevance", "bias_score",
    "chain_of_thought_coherence", "coherence", "completeness", "context_retention",
    "conversation_completeness", "coordination_efficiency", "cost_efficiency", "delegation_quality",
    "failure_rate", "fallacy_detection", "goal_achievement_rate", "hallucination_score",
    "holistic_llm_judge", "instruction_compliance", "latency_score", "logical_consistency",
    "mcp_compliance", "naturalness", "optimum_turns", "parameter_quality", "per_turn_agent_tone",
    "per_turn_naturalness", "per_turn_sentiment", "prompt_injection_detection",
    "reasoning_step_correctness", "role_adherence", "safety_score", "sentiment", "throughput",
    "token_efficiency", "tool_selection_accuracy", "tool_sequence_correctness", "toxicity_score",
    "turn_efficiency", "user_satisfaction", "workflow_completion",
)
