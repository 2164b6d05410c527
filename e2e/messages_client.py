"""Anthropic's Messages API through the official anthropic client.

Run by apis_test.go (TestResponsesAndMessagesEndToEnd) against `pagoda serve` on the default model, started
with --api-key (the client sends it as x-api-key):

    python messages_client.py --base-url http://127.0.0.1:PORT --model NAME --api-key KEY

SmolLM2-135M-Instruct is weak, so the checks are on the protocol: the message and its content blocks, stop
reasons (end_turn or max_tokens, stop_sequence, tool_use), the streamed events in Anthropic's order (the
client's own messages.stream accumulator rebuilds the message from them), a tool round trip (tool_use, then a
tool_result turn), count_tokens agreeing with the usage, and a bad request in Anthropic's error shape. Exits
non-zero on the first failed assertion.
"""

import argparse
import sys
from importlib import metadata

import anthropic

SYSTEM = "Answer in one short sentence."
QUESTION = "What is the capital of France?"
WEATHER = "sunny, 24 C"
# This client has no temperature parameter (the API still takes it): greedy through extra_body, so that
# requests with the same input give the same answer.
GREEDY = {"temperature": 0}
WEATHER_TOOL = {"name": "get_weather", "description": "Get the current weather in a given city.",
                "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--api-key", required=True)
    return ap.parse_args()


def text_of(msg):
    return "".join(b.text for b in msg.content if b.type == "text")


def plain(client, model):
    msg = client.messages.create(model=model, max_tokens=32, system=SYSTEM,
                                 messages=[{"role": "user", "content": QUESTION}])
    assert msg.type == "message" and msg.role == "assistant" and msg.id.startswith("msg_") and msg.model == model, msg
    assert msg.content[0].type == "text" and text_of(msg).strip(), msg.content
    assert msg.stop_reason in ("end_turn", "max_tokens") and msg.stop_sequence is None, msg
    u = msg.usage
    assert u.input_tokens + (u.cache_read_input_tokens or 0) > 0 and 0 < u.output_tokens <= 32, u
    counted = client.messages.count_tokens(model=model, system=SYSTEM, messages=[{"role": "user", "content": QUESTION}])
    assert counted.input_tokens == u.input_tokens + (u.cache_read_input_tokens or 0), (counted, u)
    return text_of(msg), msg.stop_reason


def multi_turn(client, model, answer):
    """A second turn with the first answer as an assistant message; a stop sequence taken from an unconstrained
    answer ends the constrained one there."""
    turns = [{"role": "user", "content": QUESTION},
             {"role": "assistant", "content": [{"type": "text", "text": answer}]},
             {"role": "user", "content": "And of Italy?"}]
    free = client.messages.create(model=model, max_tokens=32, system=SYSTEM, messages=turns, extra_body=GREEDY)
    words = text_of(free).split()
    # The second word, or (a one-word answer: the first turn samples) two characters inside the only one.
    stop = words[1] if len(words) >= 2 else text_of(free).strip()[1:3]
    assert stop.strip(), free
    cut = client.messages.create(model=model, max_tokens=32, system=SYSTEM, messages=turns, extra_body=GREEDY,
                                 stop_sequences=["@@@", stop])
    assert cut.stop_reason == "stop_sequence" and cut.stop_sequence == stop, cut
    assert stop not in text_of(cut) and text_of(free).startswith(text_of(cut)), (cut, free)
    return text_of(free), stop


def streaming(client, model):
    events = list(client.messages.create(model=model, max_tokens=32, system=SYSTEM, extra_body=GREEDY, stream=True,
                                         messages=[{"role": "user", "content": QUESTION}]))
    types = [e.type for e in events]
    assert types[:3] == ["message_start", "content_block_start", "content_block_delta"], types
    assert types[-3:] == ["content_block_stop", "message_delta", "message_stop"], types
    assert events[0].message.content == [] and events[0].message.usage.input_tokens > 0, events[0]
    text = "".join(e.delta.text for e in events if e.type == "content_block_delta")
    delta = events[-2]
    assert delta.delta.stop_reason in ("end_turn", "max_tokens") and delta.usage.output_tokens > 0, delta
    with client.messages.stream(model=model, max_tokens=32, system=SYSTEM, extra_body=GREEDY,
                                messages=[{"role": "user", "content": QUESTION}]) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert streamed == text == text_of(final), (streamed, text, final)
    assert final.stop_reason == delta.delta.stop_reason and final.usage.output_tokens == delta.usage.output_tokens, final
    return len(events), text


def tools(client, model):
    question = {"role": "user", "content": "What is the weather like in Paris?"}
    msg = client.messages.create(model=model, max_tokens=64, extra_body=GREEDY, messages=[question], tools=[WEATHER_TOOL],
                                 tool_choice={"type": "any", "disable_parallel_tool_use": True})
    uses = [b for b in msg.content if b.type == "tool_use"]
    assert msg.stop_reason == "tool_use" and len(uses) == 1 and uses[0].name == "get_weather", msg
    assert uses[0].id.startswith("toolu_") and isinstance(uses[0].input.get("city"), str), uses[0]
    # Streamed, the SDK rebuilds the input from the input_json_delta events.
    with client.messages.stream(model=model, max_tokens=64, extra_body=GREEDY, messages=[question], tools=[WEATHER_TOOL],
                                tool_choice={"type": "any", "disable_parallel_tool_use": True}) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_message()
    streamed = [b for b in final.content if b.type == "tool_use"]
    assert final.stop_reason == "tool_use" and len(streamed) == 1 and streamed[0].input == uses[0].input, (final, uses)
    assert "content_block_start" in kinds and "message_stop" in kinds, kinds
    # The round trip: the tool's result goes back in a user turn.
    turns = [question, {"role": "assistant", "content": [b.model_dump() for b in msg.content]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": WEATHER}]}]
    answer = client.messages.create(model=model, max_tokens=48, extra_body=GREEDY, messages=turns, tools=[WEATHER_TOOL],
                                    tool_choice={"type": "none"})
    assert answer.content[0].type == "text" and text_of(answer) and answer.stop_reason != "tool_use", answer
    counted = client.messages.count_tokens(model=model, messages=turns, tools=[WEATHER_TOOL],
                                           tool_choice={"type": "none"})
    u = answer.usage
    assert counted.input_tokens == u.input_tokens + (u.cache_read_input_tokens or 0), (counted, u)
    return uses[0].input, text_of(answer)


def errors(client, model):
    try:
        client.messages.create(model=model, max_tokens=8, messages=[])
    except anthropic.BadRequestError as e:
        assert e.status_code == 400 and e.body["type"] == "error", e.body
        assert e.body["error"]["type"] == "invalid_request_error" and "messages" in e.body["error"]["message"], e.body
    else:
        raise AssertionError("no error for empty messages")
    bad = anthropic.Anthropic(base_url=str(client.base_url), api_key="wrong", max_retries=0)
    try:
        bad.messages.create(model=model, max_tokens=8, messages=[{"role": "user", "content": "Hi"}])
    except anthropic.AuthenticationError as e:
        assert e.status_code == 401 and e.body["error"]["type"] == "authentication_error", e.body
    else:
        raise AssertionError("a wrong x-api-key was accepted")
    return "ok"


def main():
    args = parse_args()
    client = anthropic.Anthropic(base_url=args.base_url, api_key=args.api_key, max_retries=0, timeout=600)
    answer, stop = plain(client, args.model)
    print("ok messages.create, count_tokens:", repr(answer), stop, flush=True)
    print("ok multi-turn, stop_sequences:", multi_turn(client, args.model, answer), flush=True)
    print("ok streaming (events, text):", streaming(client, args.model), flush=True)
    print("ok tool_use round trip (input, answer):", tools(client, args.model), flush=True)
    print("ok errors in Anthropic's shape:", errors(client, args.model), flush=True)
    print("anthropic", metadata.version("anthropic"), "- all messages checks passed", flush=True)


if __name__ == "__main__":
    sys.exit(main())
