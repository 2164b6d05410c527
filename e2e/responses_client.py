"""The Responses API through the official openai client and openai-agents' default model.

Run by apis_test.go (TestResponsesAndMessagesEndToEnd) against `pagoda serve` on the default model:

    python responses_client.py --base-url http://127.0.0.1:PORT/v1 --model NAME --api-key KEY

SmolLM2-135M-Instruct is weak, so the checks are on the protocol: the response object and its output items,
the order and consistency of the streamed events (the client's own responses.stream accumulator checks them
too), tool calls and their outputs going round, stored responses continued by previous_response_id, the
JSON Schema constraint holding. openai-agents' Runner runs a tool loop through its default model class
(OpenAIResponsesModel), as in agents_client.py: one few-shot example, the model calls get_weather through
the server's fallback prompt, the SDK runs it and the model answers from its result. Exits non-zero on the
first failed assertion.
"""

import argparse
import asyncio
import json
import sys
from importlib import metadata

import openai
import pydantic
from openai import OpenAI

CITY = "Paris"
WEATHER = "sunny, 24 C"
SYSTEM = "You are a helpful assistant."
QUESTION = f"What is the weather like in {CITY}?"
EXAMPLE_QUESTION = "What is the weather like in London?"
WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "Get the current weather in a given city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                               "additionalProperties": False},
                "strict": True}


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--api-key", required=True)
    return ap.parse_args()


def check_usage(r):
    u = r.usage
    assert u.input_tokens > 0 and u.output_tokens > 0 and u.total_tokens == u.input_tokens + u.output_tokens, u
    assert u.input_tokens_details.cached_tokens >= 0 and u.output_tokens_details.reasoning_tokens == 0, u


def plain(client, model):
    r = client.responses.create(model=model, instructions="Answer in one short sentence.",
                                input="What is the capital of France?", max_output_tokens=32, temperature=0)
    assert r.object == "response" and r.id.startswith("resp_") and r.model == model, r
    assert r.status in ("completed", "incomplete") and r.error is None, r
    assert r.output[0].type == "message" and r.output[0].role == "assistant", r.output
    assert r.output[0].content[0].type == "output_text" and r.output_text.strip(), r.output
    assert r.instructions == "Answer in one short sentence." and r.store is True, r
    check_usage(r)
    # The same as message items with content parts.
    r2 = client.responses.create(model=model, input=[
        {"role": "system", "content": "Answer in one short sentence."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What is the capital of France?"}]}],
        max_output_tokens=32, temperature=0)
    assert r2.output_text == r.output_text and r2.usage.input_tokens == r.usage.input_tokens, (r2, r)
    return r.output_text


def streaming(client, model):
    events = list(client.responses.create(model=model, input="Say hello.", max_output_tokens=48, temperature=0,
                                          stream=True))
    types = [e.type for e in events]
    assert types[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"], types
    assert types[-4:-1] == ["response.output_text.done", "response.content_part.done", "response.output_item.done"], types
    assert types[-1] in ("response.completed", "response.incomplete"), types
    assert [e.sequence_number for e in events] == list(range(len(events))), events
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    final = events[-1].response
    assert text and final.output_text == text and final.status == ("completed" if types[-1] == "response.completed"
                                                                  else "incomplete"), (text, final)
    check_usage(final)
    # The client's own accumulator checks the events' consistency.
    with client.responses.stream(model=model, input="Say hello.", max_output_tokens=48, temperature=0) as stream:
        streamed = [e.type for e in stream]
        if streamed[-1] == "response.completed":
            assert stream.get_final_response().output_text == text
    return len(events), text


def tool_loop(client, model):
    """tool_choice required gives a function_call; its output goes back as a function_call_output item
    (the whole conversation sent again) and by previous_response_id (only the output sent)."""
    question = {"role": "user", "content": QUESTION}
    r = client.responses.create(model=model, input=[question], tools=[WEATHER_TOOL], tool_choice="required",
                                parallel_tool_calls=False, max_output_tokens=64, temperature=0)
    calls = [o for o in r.output if o.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_weather" and calls[0].call_id, r.output
    args = json.loads(calls[0].arguments)
    assert isinstance(args.get("city"), str), args
    result = {"type": "function_call_output", "call_id": calls[0].call_id, "output": WEATHER}
    again = client.responses.create(model=model, input=[question] + [o.model_dump(exclude_none=True) for o in r.output]
                                    + [result], tools=[WEATHER_TOOL], tool_choice="none", max_output_tokens=48,
                                    temperature=0)
    assert again.output[0].type == "message" and again.output_text, again.output
    chained = client.responses.create(model=model, previous_response_id=r.id, input=[result], tools=[WEATHER_TOOL],
                                      tool_choice="none", max_output_tokens=48, temperature=0)
    assert chained.previous_response_id == r.id and chained.output_text == again.output_text, (chained, again)
    assert chained.usage.input_tokens == again.usage.input_tokens, (chained.usage, again.usage)
    # Streamed: the call's arguments come as deltas adding up to the whole call.
    events = list(client.responses.create(model=model, input=[question], tools=[WEATHER_TOOL], tool_choice="required",
                                          parallel_tool_calls=False, max_output_tokens=64, temperature=0, stream=True))
    streamed = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert streamed == calls[0].arguments and done[0].arguments == streamed, (streamed, calls[0].arguments)
    assert events[-1].response.output[0].type == "function_call", events[-1]
    return calls[0].name, args, again.output_text


class City(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=24)
    country: str = pydantic.Field(max_length=24)
    population_millions: int


def json_schema(client, model):
    schema = City.model_json_schema()
    schema["additionalProperties"] = False
    r = client.responses.create(model=model, input="Describe Paris as JSON.", max_output_tokens=80, temperature=0,
                                text={"format": {"type": "json_schema", "name": "city", "schema": schema,
                                                 "strict": True}})
    assert r.text.format.type == "json_schema", r.text
    City.model_validate_json(r.output_text)
    parsed = client.responses.parse(model=model, input="Describe Rome as JSON.", text_format=City,
                                    max_output_tokens=80, temperature=0)
    assert isinstance(parsed.output_parsed, City), parsed
    return r.output_text, parsed.output_parsed


def previous_response(client, model):
    first = client.responses.create(model=model, instructions="Be brief.", input="My name is Ada. Say hi to me.",
                                    max_output_tokens=24, temperature=0)
    second = client.responses.create(model=model, previous_response_id=first.id, input="What is my name?",
                                     max_output_tokens=24, temperature=0)
    assert second.previous_response_id == first.id and second.usage.input_tokens > first.usage.input_tokens, second
    got = client.responses.retrieve(second.id)
    assert got.id == second.id and got.output_text == second.output_text, got
    unstored = client.responses.create(model=model, input="Hi", store=False, max_output_tokens=4)
    for missing in ("resp_missing", unstored.id):
        try:
            client.responses.create(model=model, previous_response_id=missing, input="Hi", max_output_tokens=4)
        except openai.NotFoundError as e:
            assert e.status_code == 404 and missing in e.message, e
        else:
            raise AssertionError(f"no 404 for previous_response_id {missing}")
    client.responses.delete(first.id)
    try:
        client.responses.retrieve(first.id)
    except openai.NotFoundError:
        pass
    else:
        raise AssertionError("a deleted response was retrieved")
    try:
        client.responses.create(model=model, input="Hi", truncation="auto")
    except openai.BadRequestError as e:
        assert e.status_code == 400 and e.body["param"] == "truncation", e.body
    else:
        raise AssertionError("truncation auto accepted")
    return second.output_text


async def agents_loops(args):
    """The tool loop through Runner.run, then Runner.run_streamed, on one client (one event loop)."""
    from agents import set_default_openai_client, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # traces would go to OpenAI's servers
    async with AsyncOpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=600) as client:
        set_default_openai_client(client, use_for_tracing=False)
        return [await agents_loop(args, streamed) for streamed in (False, True)]


async def agents_loop(args, streamed):
    from agents import Agent, ModelSettings, Runner, function_tool

    calls = []

    @function_tool
    def get_weather(city: str) -> str:
        """Get the current weather in a given city."""
        calls.append(city)
        return WEATHER if city == CITY else "unknown city"

    # The model named as a string: the SDK's default model class, which speaks the Responses API.
    agent = Agent(name="weather", instructions=SYSTEM, tools=[get_weather], model=args.model,
                  model_settings=ModelSettings(temperature=0, max_tokens=96))
    example = [{"role": "user", "content": EXAMPLE_QUESTION},
               {"type": "function_call", "call_id": "call_example", "name": "get_weather",
                "arguments": json.dumps({"city": "London"})}]
    run_input = example + [{"role": "user", "content": QUESTION}]
    if streamed:
        result = Runner.run_streamed(agent, run_input, max_turns=4)
        kinds = set()
        async for ev in result.stream_events():
            kinds.add(ev.type)
        assert "raw_response_event" in kinds and "run_item_stream_event" in kinds, kinds
    else:
        result = await Runner.run(agent, run_input, max_turns=4)
    print(f"openai-agents Runner ({'streamed' if streamed else 'run'}) transcript:", flush=True)
    for item in result.new_items:
        print(f"  {item.type}:", repr(getattr(item, "raw_item", item)), flush=True)
    kinds = [item.type for item in result.new_items]
    assert kinds == ["tool_call_item", "tool_call_output_item", "message_output_item"], kinds
    raw = result.new_items[0].raw_item
    assert raw.type == "function_call" and raw.name == "get_weather" and json.loads(raw.arguments) == {"city": CITY}, raw
    assert result.new_items[1].output == WEATHER and calls == [CITY], (result.new_items[1], calls)
    assert result.final_output and ("sunny" in result.final_output or "24" in result.final_output), result.final_output
    # Response ids: the Responses API answered every turn (chat completions' would be chatcmpl-).
    assert all(r.response_id and r.response_id.startswith("resp_") for r in result.raw_responses), result.raw_responses
    return raw.arguments, result.final_output


def main():
    args = parse_args()
    client = OpenAI(base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=600)
    print("ok responses.create:", repr(plain(client, args.model)), flush=True)
    print("ok stream (events, text):", streaming(client, args.model), flush=True)
    print("ok function tool loop (call, arguments, answer):", tool_loop(client, args.model), flush=True)
    print("ok text.format json_schema and responses.parse:", json_schema(client, args.model), flush=True)
    print("ok previous_response_id, retrieve, delete, 404:", repr(previous_response(client, args.model)), flush=True)
    print("ok openai-agents default model tool loop (run, run_streamed):", asyncio.run(agents_loops(args)), flush=True)
    print("openai", metadata.version("openai"), "openai-agents", metadata.version("openai-agents"),
          "- all responses checks passed", flush=True)


if __name__ == "__main__":
    sys.exit(main())
