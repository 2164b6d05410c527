"""Agent loops through LangGraph's create_react_agent and the OpenAI Agents SDK.

Run by agents_test.go (TestAgentsEndToEnd) against `pagoda serve` on the default model
started with no tool-calling flag:

    python agents_client.py --base-url http://127.0.0.1:PORT/v1 --model NAME

Each framework sends its tools with tool_choice absent (auto), as agents do by default.
SmolLM2-135M-Instruct's chat template ignores tools, so the server writes them into the
system prompt in the hermes format and reads <tool_call> blocks back (the fallback of
server/toolfallback.go). A 135M model does not call a tool zero-shot, so each agent's
conversation starts with one example: a question and the call it got, as agents' few-shot
prompts do. The loop is then the real one: the model calls get_weather for Paris through the
fallback prompt, the framework runs the Python tool, sends its result back, and the model
answers from it. Every step is printed (the transcript) and checked. Before the agents, a
Pydantic tool with an enum and a nested model (refs into its own $defs) goes through
LangChain's bind_tools with tool_choice required. Exits non-zero on the first failed assertion.
"""

import asyncio
import json
import sys
import warnings
from importlib import metadata

from client_common import parse_args

CITY = "Paris"
WEATHER = "sunny, 24 C"
SYSTEM = "You are a helpful assistant."
QUESTION = f"What is the weather like in {CITY}?"
EXAMPLE_QUESTION = "What is the weather like in London?"


def weather(city, calls):
    calls.append(city)
    return WEATHER if city == CITY else "unknown city"


def check_answer(answer, calls, framework):
    assert calls == [CITY], (framework, "tool calls", calls)
    assert answer and ("sunny" in answer or "24" in answer), (framework, "final answer", answer)


def langgraph_agent(args):
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    calls = []

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather in a given city."""
        return weather(city, calls)

    example = [HumanMessage(EXAMPLE_QUESTION),
               AIMessage("", tool_calls=[{"id": "call_example", "name": "get_weather", "args": {"city": "London"}}])]

    def prompt(state):
        return [SystemMessage(SYSTEM)] + example + state["messages"]

    llm = ChatOpenAI(base_url=args.base_url, api_key="unused", model=args.model, temperature=0, max_tokens=96,
                     max_retries=0, timeout=600)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its notice that LangGraph 1.0 moved it to langchain.agents.create_agent
        agent = create_react_agent(llm, [get_weather], prompt=prompt)
    result = agent.invoke({"messages": [HumanMessage(QUESTION)]}, {"recursion_limit": 6})
    print("LangGraph create_react_agent transcript:", flush=True)
    for m in result["messages"]:
        print(f"  {m.type}:", repr(m.content), m.tool_calls if getattr(m, "tool_calls", None) else "", flush=True)
    kinds = [m.type for m in result["messages"]]
    assert kinds == ["human", "ai", "tool", "ai"], kinds
    call = result["messages"][1].tool_calls[0]
    assert call["name"] == "get_weather" and call["args"] == {"city": CITY}, call
    assert result["messages"][2].content == WEATHER, result["messages"][2]
    assert not result["messages"][3].tool_calls, result["messages"][3]
    check_answer(result["messages"][3].content, calls, "langgraph")
    return call, result["messages"][2].content, result["messages"][3].content


async def openai_agents_run(args):
    from agents import (Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, function_tool,
                        set_tracing_disabled)
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # traces would go to OpenAI's servers
    calls = []

    @function_tool
    def get_weather(city: str) -> str:
        """Get the current weather in a given city."""
        return weather(city, calls)

    client = AsyncOpenAI(base_url=args.base_url, api_key="unused", max_retries=0, timeout=600)
    agent = Agent(name="weather", instructions=SYSTEM, tools=[get_weather],
                  model=OpenAIChatCompletionsModel(model=args.model, openai_client=client),
                  model_settings=ModelSettings(temperature=0, max_tokens=96))
    example = [{"role": "user", "content": EXAMPLE_QUESTION},
               {"type": "function_call", "call_id": "call_example", "name": "get_weather",
                "arguments": json.dumps({"city": "London"})}]
    result = await Runner.run(agent, example + [{"role": "user", "content": QUESTION}], max_turns=4)
    print("openai-agents Runner.run transcript:", flush=True)
    for item in result.new_items:
        print(f"  {item.type}:", repr(getattr(item, "raw_item", item)), flush=True)
    kinds = [item.type for item in result.new_items]
    assert kinds == ["tool_call_item", "tool_call_output_item", "message_output_item"], kinds
    raw = result.new_items[0].raw_item
    assert raw.name == "get_weather" and json.loads(raw.arguments) == {"city": CITY}, raw
    assert result.new_items[1].output == WEATHER, result.new_items[1]
    check_answer(result.final_output, calls, "openai-agents")
    return (raw.name, raw.arguments), result.new_items[1].output, result.final_output


def pydantic_refs(args):
    """A Pydantic tool with an enum and a nested model (its schema refers to them by $ref into
    its own $defs) beside another tool, with tool_choice required: the calls are valid."""
    from enum import Enum

    import pydantic
    from langchain_openai import ChatOpenAI

    class Color(str, Enum):
        red = "red"
        green = "green"

    class Pet(pydantic.BaseModel):
        name: str = pydantic.Field(max_length=12)
        color: Color

    class SetProfile(pydantic.BaseModel):
        """Set the user's favorite color and pet."""
        favorite_color: Color
        pet: Pet

    class GetWeather(pydantic.BaseModel):
        """Get the current weather in a given city."""
        city: str = pydantic.Field(max_length=24)

    assert "$defs" in SetProfile.model_json_schema(), SetProfile.model_json_schema()
    llm = ChatOpenAI(base_url=args.base_url, api_key="unused", model=args.model, temperature=0, max_tokens=160,
                     max_retries=0, timeout=600)
    msg = llm.bind_tools([SetProfile, GetWeather], tool_choice="required", parallel_tool_calls=False).invoke(
        "My favorite color is green and my cat Tom is red.")
    assert len(msg.tool_calls) == 1 and not msg.invalid_tool_calls, msg
    call = msg.tool_calls[0]
    {"SetProfile": SetProfile, "GetWeather": GetWeather}[call["name"]].model_validate(call["args"])
    return call["name"], call["args"]


def main():
    args = parse_args()
    print("ok pydantic tool with $defs, tool_choice required:", pydantic_refs(args), flush=True)
    print("ok langgraph create_react_agent (call, result, answer):", langgraph_agent(args), flush=True)
    print("ok openai-agents Runner.run (call, result, answer):", asyncio.run(openai_agents_run(args)), flush=True)
    print("langgraph", metadata.version("langgraph"), "langchain-openai", metadata.version("langchain-openai"),
          "openai-agents", metadata.version("openai-agents"), "- all agent checks passed", flush=True)


if __name__ == "__main__":
    sys.exit(main())
