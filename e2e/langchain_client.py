"""Structured outputs and tool calling through LangChain's ChatOpenAI (langchain-openai).

Run by structured_test.go (TestStructuredEndToEnd) in the same virtual environment as
structured_client.py:

    python langchain_client.py --base-url http://127.0.0.1:PORT/v1 --model NAME

with_structured_output(method="json_schema") sends a strict response_format and parses the
answer into the Pydantic model; bind_tools sends the tools and tool_choice and returns the
calls as AIMessage.tool_calls with parsed arguments. Exits non-zero on the first failed
assertion.
"""

import sys
from importlib import metadata
from typing import List, Literal

import jsonschema
import pydantic
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI

from client_common import parse_args


class City(pydantic.BaseModel):
    """A city and the country it is in."""
    name: str = pydantic.Field(max_length=24)
    country: str = pydantic.Field(max_length=24)
    population_millions: int
    landmarks: List[str] = pydantic.Field(min_length=1, max_length=3)
    size: Literal["small", "medium", "large"]


class GetWeather(pydantic.BaseModel):
    """Get the current weather in a city."""
    city: str = pydantic.Field(max_length=32)
    unit: Literal["celsius", "fahrenheit"]


class GetTime(pydantic.BaseModel):
    """Get the current time in a time zone."""
    timezone: str = pydantic.Field(max_length=32)


SCHEMAS = {"GetWeather": GetWeather.model_json_schema(), "GetTime": GetTime.model_json_schema()}


def check_structured(llm):
    out = llm.with_structured_output(City, method="json_schema").invoke("Describe Paris, the capital of France.")
    assert isinstance(out, City), out
    # include_raw: the raw AIMessage comes back beside the parsed object.
    raw = llm.with_structured_output(City, method="json_schema", include_raw=True).invoke(
        "Describe Paris, the capital of France.")
    assert raw["parsing_error"] is None and raw["parsed"] == out, raw
    assert isinstance(raw["raw"], AIMessage), raw
    return out


def valid(calls, names):
    assert calls, calls
    for c in calls:
        assert c["name"] in names and c["id"], c
        jsonschema.Draft202012Validator(SCHEMAS[c["name"]]).validate(c["args"])
    return [(c["name"], c["args"]) for c in calls]


def check_tools(llm):
    question = "What is the weather like in Paris today?"
    required = llm.bind_tools([GetWeather, GetTime], tool_choice="required").invoke(question)
    got = valid(required.tool_calls, SCHEMAS)
    assert not required.invalid_tool_calls, required
    # tool_choice as a tool's name: LangChain sends {"type": "function", "function": {"name": …}}.
    named = llm.bind_tools([GetWeather, GetTime], tool_choice="GetWeather").invoke(question)
    got += valid(named.tool_calls, ["GetWeather"])
    # Streamed: the chunks' tool_call_chunks add up to the same calls.
    total = None
    for chunk in llm.bind_tools([GetWeather, GetTime], tool_choice="required").stream(question):
        total = chunk if total is None else total + chunk
    assert valid(total.tool_calls, SCHEMAS) == valid(required.tool_calls, SCHEMAS), (total.tool_calls, required.tool_calls)
    return got


def main():
    args = parse_args()
    llm = ChatOpenAI(base_url=args.base_url, api_key="unused", model=args.model, temperature=0, max_tokens=160,
                     max_retries=0, timeout=600)
    print("ok with_structured_output(method=json_schema):", repr(check_structured(llm)), flush=True)
    print("ok bind_tools (required, named, streamed):", check_tools(llm), flush=True)
    print("langchain-openai", metadata.version("langchain-openai"), "langchain-core", metadata.version("langchain-core"),
          "- all langchain checks passed", flush=True)


if __name__ == "__main__":
    sys.exit(main())
