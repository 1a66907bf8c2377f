"""A scripted agent instrumented with the OpenTelemetry SDK (GenAI semantic conventions)."""

from __future__ import annotations

import json
from typing import Any


def tracer_provider(exporter: Any) -> Any:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "scripted-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def run_agent(tracer: Any, i: int) -> str:
    """One agent run: invoke_agent > chat (asks for a tool) > execute_tool > chat (answers); its trace id."""
    city = ["Paris", "Oslo", "Lima", "Kyiv", "Quito"][i % 5]
    question = f"Weather in {city}? (run {i})"
    with tracer.start_as_current_span("invoke_agent weather") as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        root.set_attribute("gen_ai.agent.name", "weather")
        with tracer.start_as_current_span("chat gpt-4o") as chat:
            chat.set_attributes({
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 50, "gen_ai.usage.output_tokens": 10,
                "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                    {"type": "tool_call", "id": f"call_{i}", "name": "get_weather", "arguments": {"city": city}}]}]),
            })
        with tracer.start_as_current_span("execute_tool get_weather") as tool:
            tool.set_attributes({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                                 "gen_ai.tool.call.id": f"call_{i}",
                                 "gen_ai.tool.call.arguments": json.dumps({"city": city}),
                                 "gen_ai.tool.call.result": json.dumps({"temp_c": 10 + i})})
        with tracer.start_as_current_span("chat gpt-4o") as chat:
            chat.set_attributes({
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 70, "gen_ai.usage.output_tokens": 12,
                "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                    {"type": "text", "content": f"It is {10 + i} C in {city}."}]}]),
            })
        return format(root.get_span_context().trace_id, "032x")
