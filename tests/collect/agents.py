"""Agents and tools that the collect tests name as ``tests.collect.agents:NAME``."""

from __future__ import annotations

import json

CALLS: list[list[dict]] = []


def weather_agent(messages, tools=None):
    """Calls the weather tool once, then answers with what it returned."""
    CALLS.append(messages)
    last = messages[-1]
    if last["role"] == "tool":
        return {"content": f"It is {json.loads(last['content'])['sky']} in Paris.",
                "usage": {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.001}}
    names = [t["function"]["name"] for t in tools or ()]
    return {"tool_calls": [{"name": names[0], "arguments": {"city": "Paris"}}]} if names else "No tools."


def weather(city: str) -> dict:
    return {"city": city, "sky": "sunny"}


async def async_echo(messages):
    CALLS.append(messages)
    return f"echo: {messages[-1]['content']}"


def broken(messages):
    raise RuntimeError("agent crashed")
