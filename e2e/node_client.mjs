// Structured outputs and tool calling through the official OpenAI Node client.
//
// Run by structured_test.go (TestStructuredEndToEnd) with the packages of
// e2e/package-lock.json (openai, ajv) installed beside a copy of this file:
//
//     node node_client.mjs --base-url http://127.0.0.1:PORT/v1 --model NAME
//
// Every check asserts on real outputs of the default model at temperature 0,
// validated by ajv independently of the server. Exits non-zero on the first
// failed assertion.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

import Ajv from "ajv";
import OpenAI from "openai";
import { VERSION } from "openai/version";

const { values: args } = parseArgs({ options: { "base-url": { type: "string" }, model: { type: "string" } } });
const model = args.model;
const client = new OpenAI({ baseURL: args["base-url"], apiKey: "unused", maxRetries: 0, timeout: 600_000 });
const ajv = new Ajv({ allErrors: true });

const ticketSchema = {
  type: "object",
  properties: {
    title: { type: "string", maxLength: 32 },
    priority: { type: "string", enum: ["low", "medium", "high"] },
    estimate_hours: { type: "integer", minimum: 0, maximum: 100 },
    owner: {
      type: "object",
      properties: { name: { type: "string", maxLength: 24 }, team: { type: "string", maxLength: 24 } },
      required: ["name", "team"],
      additionalProperties: false,
    },
    labels: { type: "array", items: { type: "string", maxLength: 12 }, minItems: 1, maxItems: 3 },
  },
  required: ["title", "priority", "estimate_hours", "owner", "labels"],
  additionalProperties: false,
};
const ticketRequest = {
  model,
  temperature: 0,
  max_tokens: 160,
  messages: [{ role: "user", content: "File a ticket: the login page is down, Ana from the web team owns it." }],
  response_format: { type: "json_schema", json_schema: { name: "ticket", strict: true, schema: ticketSchema } },
};

const weatherParams = {
  type: "object",
  properties: { city: { type: "string", maxLength: 32 }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
  required: ["city", "unit"],
  additionalProperties: false,
};
const tools = [
  { type: "function", function: { name: "get_weather", description: "Get the current weather in a city", parameters: weatherParams } },
];
const toolRequest = {
  model,
  temperature: 0,
  max_tokens: 96,
  messages: [{ role: "user", content: "What is the weather like in Berlin?" }],
  tools,
  tool_choice: "required",
};

function valid(schema, doc) {
  const check = ajv.compile(schema);
  assert.ok(check(doc), `${JSON.stringify(doc)}: ${ajv.errorsText(check.errors)}`);
  return doc;
}

function validCalls(calls) {
  assert.ok(calls && calls.length > 0, `no tool calls: ${JSON.stringify(calls)}`);
  return calls.map((c) => {
    assert.ok(c.id, JSON.stringify(c));
    assert.equal(c.type, "function");
    assert.equal(c.function.name, "get_weather");
    return [c.function.name, valid(weatherParams, JSON.parse(c.function.arguments))];
  });
}

async function checkJSONSchema() {
  const r = await client.chat.completions.create(ticketRequest);
  assert.equal(r.choices[0].finish_reason, "stop");
  const doc = valid(ticketSchema, JSON.parse(r.choices[0].message.content));
  let text = "";
  for await (const chunk of await client.chat.completions.create({ ...ticketRequest, stream: true })) {
    text += chunk.choices[0]?.delta?.content ?? "";
  }
  assert.equal(text, r.choices[0].message.content);
  return doc;
}

async function checkToolsRequired() {
  const r = await client.chat.completions.create(toolRequest);
  assert.equal(r.choices[0].finish_reason, "tool_calls");
  return validCalls(r.choices[0].message.tool_calls);
}

// A raw stream: argument deltas concatenated per index; then the client's
// stream helper, which accumulates the same calls itself.
async function checkToolStream(whole) {
  const calls = [];
  let finish = null;
  for await (const chunk of await client.chat.completions.create({ ...toolRequest, stream: true })) {
    for (const ch of chunk.choices) {
      finish = ch.finish_reason ?? finish;
      for (const d of ch.delta.tool_calls ?? []) {
        const c = (calls[d.index] ??= { id: "", type: "function", function: { name: "", arguments: "" } });
        c.id = d.id ?? c.id;
        c.function.name += d.function?.name ?? "";
        c.function.arguments += d.function?.arguments ?? "";
      }
    }
  }
  assert.equal(finish, "tool_calls");
  assert.deepEqual(validCalls(calls), whole);
  const final = await client.chat.completions.stream(toolRequest).finalChatCompletion();
  assert.deepEqual(validCalls(final.choices[0].message.tool_calls), whole);
  return calls.length;
}

async function checkGuided() {
  const r = await client.chat.completions.create({
    model, temperature: 0, max_tokens: 8, messages: [{ role: "user", content: "Is the sun hot?" }],
    guided_choice: ["yes", "no"], // vLLM's field, passed through as the Node client does with unknown keys
  });
  assert.ok(["yes", "no"].includes(r.choices[0].message.content), r.choices[0].message.content);
  return r.choices[0].message.content;
}

async function checkError() {
  await assert.rejects(
    client.chat.completions.create({ ...toolRequest, tool_choice: undefined, tools: undefined, guided_regex: "[a-" }),
    (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === "guided_regex" && e.message.includes("guided_regex"),
  );
}

console.log("ok json_schema (strict, streamed too):", JSON.stringify(await checkJSONSchema()));
const whole = await checkToolsRequired();
console.log("ok tool_choice required:", JSON.stringify(whole));
console.log("ok streamed tool calls reassemble (raw and stream helper), calls:", await checkToolStream(whole));
console.log("ok guided_choice:", await checkGuided());
await checkError();
console.log("ok invalid guided_regex: 400 naming the field");
console.log(`openai ${VERSION} ajv ${JSON.parse(readFileSync(new URL("./node_modules/ajv/package.json", import.meta.url))).version} node ${process.version} - all node checks passed`);
