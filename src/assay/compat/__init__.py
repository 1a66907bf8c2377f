"""Peer-compatible APIs as thin layers over assay's core.

Each module mirrors the public surface of one peer system closely enough that the usage snippets
of its documentation run with only their import lines changed:

- ``assay.compat.eval_lib``: eval_lib's conversation metrics and ``evaluate_conversations``;
- ``assay.compat.fair_forge``: Fair Forge's ``Agentic.run`` with its retriever, dataset and
  result models, statistical modes and pass@k helpers, under the same module paths
  (``assay.compat.fair_forge.metrics.agentic``, ``.statistical``, ``.core.retriever``,
  ``.schemas.common``);
- ``assay.compat.uaef``: UAEF's ``evaluate``, its trace and result models and its custom-metric
  registration.

None of them implements a metric: they build ``assay.Trace`` objects with the importers, score
them with the core metrics through ``assay.Evaluation`` and the user's judge, and map the core
results back into the peer's shapes. Where the peer has a documented bug, the layer
keeps the core's behaviour and says so in its docstring. Importing this package imports none of
the three modules.
"""

__all__: list[str] = []
