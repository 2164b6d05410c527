"""Structured outputs and tool calling through the official OpenAI Python client.

Run by structured_test.go (TestStructuredEndToEnd) inside a virtual environment with
openai, jsonschema and langchain-openai, against `pagoda serve` started with
--enable-auto-tool-choice --tool-call-parser hermes:

    python structured_client.py --base-url http://127.0.0.1:PORT/v1 --model NAME

Every check asserts on real outputs of the default model (SmolLM2-135M-Instruct) at
temperature 0: outputs are parsed and validated independently of the server (json.loads,
jsonschema, re.fullmatch, Pydantic). Exits non-zero on the first failed assertion.
"""

import json
import re
import sys
from importlib import metadata
from typing import List, Literal

import jsonschema
import openai
import pydantic

from client_common import connect, expect_bad_requests, parse_args

# A strict schema exercising required properties, an enum, an integer, a nested
# object and a bounded array (strings are bounded too, so that every output fits
# in max_tokens).
PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "role": {"type": "string", "enum": ["admin", "editor", "viewer"]},
        "address": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 24},
                "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
            },
            "required": ["city", "zip"],
            "additionalProperties": False,
        },
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "minItems": 1, "maxItems": 3},
    },
    "required": ["name", "age", "role", "address", "tags"],
    "additionalProperties": False,
}
PERSON_PROMPT = [{"role": "user", "content": "Describe Alice, a 30 year old admin who lives in Paris, as JSON."}]

WEATHER_PARAMS = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 32},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "unit"],
    "additionalProperties": False,
}
TIME_PARAMS = {
    "type": "object",
    "properties": {"timezone": {"type": "string", "maxLength": 32}},
    "required": ["timezone"],
    "additionalProperties": False,
}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city",
                                      "parameters": WEATHER_PARAMS}},
    {"type": "function", "function": {"name": "get_time", "description": "Get the current time in a time zone",
                                      "parameters": TIME_PARAMS}},
]
TOOL_PARAMS = {"get_weather": WEATHER_PARAMS, "get_time": TIME_PARAMS}
WEATHER_PROMPT = [{"role": "user", "content": "What is the weather like in Paris today?"}]


class Address(pydantic.BaseModel):
    city: str = pydantic.Field(max_length=24)
    country: str = pydantic.Field(max_length=24)


class Person(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=24)
    age: int
    role: Literal["admin", "editor", "viewer"]
    address: Address
    skills: List[str] = pydantic.Field(min_length=1, max_length=3)


def validate(doc, schema):
    jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(doc)


def check_json_object(client, model):
    r = client.chat.completions.create(
        model=model, temperature=0, max_tokens=96, response_format={"type": "json_object"},
        messages=[{"role": "user", "content": "Give the name and age of Alice, who is 30, as a JSON object."}])
    ch = r.choices[0]
    assert ch.finish_reason == "stop", ch
    doc = json.loads(ch.message.content)
    assert isinstance(doc, dict), doc
    return doc


def check_json_schema(client, model):
    r = client.chat.completions.create(
        model=model, temperature=0, max_tokens=160, messages=PERSON_PROMPT,
        response_format={"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": PERSON_SCHEMA}})
    ch = r.choices[0]
    assert ch.finish_reason == "stop", ch
    doc = json.loads(ch.message.content)
    validate(doc, PERSON_SCHEMA)
    # The same constraint streamed: the content deltas concatenate to a valid document.
    text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model=model, temperature=0, max_tokens=160, messages=PERSON_PROMPT, stream=True,
        response_format={"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": PERSON_SCHEMA}})
        if c.choices)
    assert text == ch.message.content, (text, ch.message.content)
    return doc


def check_parse(client, model):
    """chat.completions.parse sends the Pydantic model as a strict json_schema and parses the answer."""
    r = client.chat.completions.parse(model=model, temperature=0, max_tokens=160, response_format=Person,
                                      messages=[{"role": "user", "content": "Describe Bob, a 41 year old editor from Lyon, France."}])
    msg = r.choices[0].message
    assert r.choices[0].finish_reason == "stop", r.choices[0]
    assert isinstance(msg.parsed, Person), msg
    assert 1 <= len(msg.parsed.skills) <= 3, msg.parsed
    # The streaming helper parses the accumulated content the same way.
    with client.chat.completions.stream(model=model, temperature=0, max_tokens=160, response_format=Person,
                                        messages=[{"role": "user", "content": "Describe Bob, a 41 year old editor from Lyon, France."}]) as s:
        final = s.get_final_completion()
    assert final.choices[0].message.parsed == msg.parsed, (final.choices[0].message.parsed, msg.parsed)
    return msg.parsed


def check_regex(client, model):
    pattern = r"[0-9]{3}-[0-9]{3}-[0-9]{4}"
    messages = [{"role": "user", "content": "Give me a phone number."}]
    out = []
    for extra in ({"guided_regex": pattern}, {"structured_outputs": {"regex": pattern}}):
        r = client.chat.completions.create(model=model, temperature=0, max_tokens=24, messages=messages, extra_body=extra)
        text = r.choices[0].message.content
        assert re.fullmatch(pattern, text), (extra, text)
        out.append(text)
    # On /v1/completions too.
    c = client.completions.create(model=model, prompt="The date of the moon landing was", temperature=0,
                                  max_tokens=16, extra_body={"guided_regex": r" [0-9]{4}-[0-9]{2}-[0-9]{2}"})
    assert re.fullmatch(r" [0-9]{4}-[0-9]{2}-[0-9]{2}", c.choices[0].text), c.choices[0].text
    return out + [c.choices[0].text]


def check_choice(client, model):
    choices = ["positive", "negative", "neutral"]
    r = client.chat.completions.create(
        model=model, temperature=0, max_tokens=8, extra_body={"guided_choice": choices},
        messages=[{"role": "user", "content": "Classify the sentiment: I love this wonderful movie!"}])
    text = r.choices[0].message.content
    assert text in choices, text
    c = client.completions.create(model=model, prompt="Is the sky blue? Answer:", temperature=0, max_tokens=8,
                                  extra_body={"structured_outputs": {"choice": [" yes", " no"]}})
    assert c.choices[0].text in (" yes", " no"), c.choices[0].text
    return text, c.choices[0].text


def check_grammar(client, model):
    gbnf = 'root ::= "The answer is " digit digit? "."\ndigit ::= [0-9]'
    c = client.completions.create(model=model, prompt="What is 2 + 3?", temperature=0, max_tokens=16,
                                  extra_body={"guided_grammar": gbnf})
    assert re.fullmatch(r"The answer is [0-9]{1,2}\.", c.choices[0].text), c.choices[0].text
    # llama-server's spelling: grammar.
    r = client.chat.completions.create(model=model, temperature=0, max_tokens=8, messages=[{"role": "user", "content": "Is water wet?"}],
                                       extra_body={"grammar": 'root ::= "yes" | "no"'})
    assert r.choices[0].message.content in ("yes", "no"), r.choices[0].message.content
    return c.choices[0].text, r.choices[0].message.content


def valid_calls(calls, names=None):
    """Each call has an id, type function, a known name and arguments valid for its tool."""
    assert calls, calls
    for call in calls:
        assert call.id and call.type == "function", call
        assert call.function.name in (names or TOOL_PARAMS), call
        validate(json.loads(call.function.arguments), TOOL_PARAMS[call.function.name])
    return [(c.function.name, json.loads(c.function.arguments)) for c in calls]


def check_tool_required(client, model):
    r = client.chat.completions.create(model=model, temperature=0, max_tokens=96, messages=WEATHER_PROMPT,
                                       tools=TOOLS, tool_choice="required")
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls", ch
    got = valid_calls(ch.message.tool_calls)
    # parallel_tool_calls=false: exactly one call.
    one = client.chat.completions.create(model=model, temperature=0, max_tokens=96, messages=WEATHER_PROMPT,
                                         tools=TOOLS, tool_choice="required", parallel_tool_calls=False)
    assert len(one.choices[0].message.tool_calls) == 1, one.choices[0].message
    valid_calls(one.choices[0].message.tool_calls)
    return got


def check_tool_named(client, model):
    r = client.chat.completions.create(model=model, temperature=0, max_tokens=64, messages=WEATHER_PROMPT, tools=TOOLS,
                                       tool_choice={"type": "function", "function": {"name": "get_time"}})
    calls = r.choices[0].message.tool_calls
    assert len(calls) == 1, calls
    assert r.choices[0].finish_reason == "stop", r.choices[0]  # as OpenAI answers a named tool choice
    return valid_calls(calls, ["get_time"])


def check_tool_pydantic(client, model):
    """A strict tool made from a Pydantic model; parse() returns its arguments as that model."""
    class GetWeather(pydantic.BaseModel):
        city: str = pydantic.Field(max_length=32)
        unit: Literal["celsius", "fahrenheit"]

    r = client.chat.completions.parse(model=model, temperature=0, max_tokens=64, messages=WEATHER_PROMPT,
                                      tools=[openai.pydantic_function_tool(GetWeather)],
                                      tool_choice={"type": "function", "function": {"name": "GetWeather"}})
    call = r.choices[0].message.tool_calls[0]
    assert isinstance(call.function.parsed_arguments, GetWeather), call
    return call.function.parsed_arguments


def check_tool_stream(client, model, whole):
    """Streamed tool calls: argument deltas concatenated per index give the same valid calls."""
    calls = {}
    finish = None
    for chunk in client.chat.completions.create(model=model, temperature=0, max_tokens=96, messages=WEATHER_PROMPT,
                                                tools=TOOLS, tool_choice="required", stream=True):
        for ch in chunk.choices:
            finish = ch.finish_reason or finish
            for d in ch.delta.tool_calls or []:
                c = calls.setdefault(d.index, {"id": None, "name": "", "arguments": ""})
                c["id"] = d.id or c["id"]
                if d.function:
                    c["name"] += d.function.name or ""
                    c["arguments"] += d.function.arguments or ""
    assert finish == "tool_calls", finish
    got = []
    for i in sorted(calls):
        c = calls[i]
        assert c["id"] and c["name"] in TOOL_PARAMS, c
        args = json.loads(c["arguments"])
        validate(args, TOOL_PARAMS[c["name"]])
        got.append((c["name"], args))
    assert got == whole, (got, whole)
    return got


# Few-shot Hermes-style calling: SmolLM2's template does not show tools, so the
# system prompt and one example teach the <tool_call> format that --tool-call-parser
# hermes reads.
HERMES_SHOT = [
    {"role": "system", "content": "You are a function calling AI model. To call a function, answer with "
                                  "<tool_call>{\"name\": <function-name>, \"arguments\": <args-dict>}</tool_call>."},
    {"role": "user", "content": "What is the weather like in London?"},
    {"role": "assistant", "content": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "London", "unit": "celsius"}}\n</tool_call>'},
    {"role": "user", "content": "What is the weather like in Paris?"},
]


def check_tool_auto(client, model):
    """Tools without tool_choice (auto, hermes parser): a plain answer comes back as content;
    an answer in Hermes' format comes back as tool calls, streamed or not."""
    r = client.chat.completions.create(model=model, temperature=0, max_tokens=16, tools=TOOLS,
                                       messages=[{"role": "user", "content": "What is 2 + 2?"}])
    msg = r.choices[0].message
    assert msg.content and "4" in msg.content and not msg.tool_calls, msg
    assert r.choices[0].finish_reason in ("stop", "length"), r.choices[0]
    r = client.chat.completions.create(model=model, temperature=0, max_tokens=64, tools=TOOLS, messages=HERMES_SHOT)
    assert r.choices[0].finish_reason == "tool_calls", r.choices[0]
    calls = valid_calls(r.choices[0].message.tool_calls)
    with client.chat.completions.stream(model=model, temperature=0, max_tokens=64, tools=TOOLS, messages=HERMES_SHOT) as s:
        final = s.get_final_completion()
    assert valid_calls(final.choices[0].message.tool_calls) == calls, final
    return msg.content, calls


def check_tool_round_trip(client, model):
    """The assistant's tool call and the tool's result go back in the history."""
    messages = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": json.dumps({"city": "Paris", "unit": "celsius"})}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"temperature": 21, "sky": "sunny"})},
    ]
    r = client.chat.completions.create(model=model, temperature=0, max_tokens=32, messages=messages, tools=TOOLS)
    msg = r.choices[0].message
    assert msg.content and "sunny" in msg.content and not msg.tool_calls, msg
    return msg.content


def check_errors(client, model):
    """An invalid constraint is a 400 whose param and message name the field."""
    msgs = [{"role": "user", "content": "hi"}]
    cases = [
        (dict(response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"a": {"type": "strin"}}}}}),
         "response_format.json_schema.schema"),
        (dict(response_format={"type": "xml"}), "response_format"),
        (dict(extra_body={"guided_regex": "([0-9]"}), "guided_regex"),
        (dict(extra_body={"guided_grammar": 'root ::= ("a" | "b"'}), "guided_grammar"),
        (dict(extra_body={"guided_json": {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}}), "guided_json"),
        (dict(extra_body={"guided_choice": []}), "guided_choice"),
        (dict(extra_body={"guided_regex": "a", "guided_choice": ["a"]}), "guided_choice"),
        (dict(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}}), "tool_choice"),
        (dict(extra_body={"no_such_field": 1}), "no_such_field"),
    ]

    def check(e, field):
        param = (e.body or {}).get("param") if isinstance(e.body, dict) else None
        assert param == field and field in e.message, (field, param, e.message)

    expect_bad_requests(lambda **kw: client.chat.completions.create(model=model, messages=msgs, max_tokens=4, **kw),
                        cases, check)


def main():
    args = parse_args()
    client = connect(args)
    m = args.model
    print("ok json_object:", check_json_object(client, m), flush=True)
    print("ok json_schema (strict, streamed too):", check_json_schema(client, m), flush=True)
    print("ok chat.completions.parse with Pydantic (and .stream):", repr(check_parse(client, m)), flush=True)
    print("ok guided_regex / structured_outputs.regex / completions:", check_regex(client, m), flush=True)
    print("ok guided_choice / structured_outputs.choice:", check_choice(client, m), flush=True)
    print("ok guided_grammar / grammar:", check_grammar(client, m), flush=True)
    required = check_tool_required(client, m)
    print("ok tool_choice required (and parallel_tool_calls=false):", required, flush=True)
    print("ok tool_choice named:", check_tool_named(client, m), flush=True)
    print("ok pydantic_function_tool parsed:", repr(check_tool_pydantic(client, m)), flush=True)
    print("ok streamed tool calls reassemble:", check_tool_stream(client, m, required), flush=True)
    print("ok auto tool choice (hermes): plain answer, calls, streamed calls:", check_tool_auto(client, m), flush=True)
    print("ok tool result round trip:", repr(check_tool_round_trip(client, m)), flush=True)
    check_errors(client, m)
    print("ok invalid schema / regex / grammar / choice / tool_choice / unknown field: 400 naming the field", flush=True)
    print("openai", openai.__version__, "jsonschema", metadata.version("jsonschema"), "pydantic", pydantic.VERSION,
          "- all structured checks passed", flush=True)


if __name__ == "__main__":
    sys.exit(main())
