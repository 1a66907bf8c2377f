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


def booking_agent(messages, tools=None):
    """Calls the first tool with seat A1 (once per turn), then answers with its result."""
    last = messages[-1]
    if last["role"] == "tool":
        return f"Result: {last['content']}"
    names = [t["function"]["name"] for t in tools or ()]
    return {"tool_calls": [{"name": names[0], "arguments": {"seat": "A1"}}]} if names else "No tools."


def confirming_agent(messages, tools=None):
    """Asks before booking; books once the user says to go ahead."""
    last = messages[-1]
    if last["role"] == "tool":
        return f"Done: {last['content']}"
    if "go ahead" in last["content"].lower():
        return {"tool_calls": [{"name": "book", "arguments": {"seat": "A1"}}]}
    return "Seat A1 is free. Shall I book it?"
