"""The retrievers the seed 001 snippets import (``from your_retriever import AgenticRetriever``).

``AgenticRetriever`` is the seed's "Data Requirements" example verbatim, but for its import
lines; ``SevenOfTen`` is one conversation with 10 interactions of which 7 are answered correctly
(the seed's worked example).
"""

from assay.compat.fair_forge.core.retriever import Retriever
from assay.compat.fair_forge.schemas.common import Batch, Dataset


class AgenticRetriever(Retriever):
    def load_dataset(self) -> list[Dataset]:
        return [
            Dataset(
                session_id="conversation_001",
                assistant_id="agent_v1",
                language="english",
                context="Math calculator conversation",
                conversation=[
                    Batch(
                        qa_id="q1_interaction1",
                        query="What is 5 + 3?",
                        assistant="The result is 8.",
                        ground_truth_assistant="8",
                        agentic={
                            "tools_used": [{
                                "tool_name": "calculator",
                                "parameters": {"a": 5, "b": 3},
                                "result": 8,
                                "step": 1
                            }],
                            "final_answer_uses_tools": True
                        },
                        ground_truth_agentic={
                            "expected_tools": [{
                                "tool_name": "calculator",
                                "parameters": {"a": 5, "b": 3},
                                "step": 1
                            }],
                            "tool_sequence_matters": False
                        }
                    ),
                    Batch(
                        qa_id="q1_interaction2",
                        query="What is 100 / 4?",
                        assistant="100 divided by 4 is 25.",
                        ground_truth_assistant="25"
                    ),
                ],
            ),
        ]


class SevenOfTen(Retriever):
    """Ten interactions, answers "right-i" (graded 0.9) for i < 7 and "wrong-i" (graded 0.2) after."""

    def load_dataset(self) -> list[Dataset]:
        batches = [Batch(qa_id=f"q{i}", query=f"question {i}", assistant=f"{'right' if i < 7 else 'wrong'}-{i}",
                         ground_truth_assistant=f"reference {i}") for i in range(10)]
        return [Dataset(session_id="seven_of_ten", assistant_id="agent_v1", context="", conversation=batches)]
