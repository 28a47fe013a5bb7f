"""OpenAI's own Python client reading a tool call from `attnscope serve --tool-call-parser
hermes` (run by tests/test_serve.cpp with the server's base URL and the reply's length in
tokens; the server's model is scripted to reply "I'll check." and a get_weather call), and a
call forced by tool_choice. Exits non-zero, saying why, on any difference.

    python3 serve_openai_tools_client.py http://127.0.0.1:PORT/v1 REPLY_TOKENS
"""
import json
import sys

import openai

base_url, reply_tokens = sys.argv[1], int(sys.argv[2])
client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=30)
tools = [{"type": "function", "function": {"name": "get_weather",
                                           "parameters": {"type": "object"}}}]
asked = dict(model="scripted", messages=[{"role": "user", "content": "Go"}], tools=tools,
             max_tokens=reply_tokens, temperature=0, extra_body={"ignore_eos": True})

whole = client.chat.completions.create(**asked)
choice = whole.choices[0]
assert choice.finish_reason == "tool_calls", choice
assert choice.message.content == "I'll check.\n", choice.message
(call,) = choice.message.tool_calls
assert call.type == "function" and call.function.name == "get_weather", call
assert json.loads(call.function.arguments) == {"city": "Paris", "days": [1, 2]}, call

content, calls, reasons = "", {}, []
for chunk in client.chat.completions.create(**asked, stream=True):
    delta = chunk.choices[0].delta
    content += delta.content or ""
    for part in delta.tool_calls or []:  # a client joins each call's pieces by index
        joined = calls.setdefault(part.index, {"name": "", "arguments": ""})
        joined["name"] += part.function.name or ""
        joined["arguments"] += part.function.arguments or ""
    reasons.append(chunk.choices[0].finish_reason)
assert content == "I'll check.\n", content
assert list(calls) == [0] and calls[0]["name"] == "get_weather", calls
assert json.loads(calls[0]["arguments"]) == {"city": "Paris", "days": [1, 2]}, calls
assert reasons[-1] == "tool_calls", reasons

# tool_choice naming a function forces the call, whatever the model would rather say: the
# reply is written under the function's parameters schema (no parser involved).
clock = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]}}}
forced = client.chat.completions.create(**{
    **asked, "tools": tools + [clock], "max_tokens": reply_tokens + 8,
    "tool_choice": {"type": "function", "function": {"name": "get_time"}}})
(call,) = forced.choices[0].message.tool_calls
assert forced.choices[0].finish_reason == "tool_calls", forced
assert forced.choices[0].message.content is None, forced
assert call.function.name == "get_time", call
assert json.loads(call.function.arguments)["zone"] in ("UTC", "CET"), call
print("openai tools client: ok")
