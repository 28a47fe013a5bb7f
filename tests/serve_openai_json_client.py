"""OpenAI's own Python client asking `attnscope serve` for JSON mode and structured outputs
(response_format json_object and json_schema; run by tests/test_serve.cpp with the server's base URL and the reply's length in
tokens; the server's model is scripted to reply {"city": "Paris", "days": [1, 2]} and then go
on). Exits non-zero, saying why, on any difference.

    python3 serve_openai_json_client.py http://127.0.0.1:PORT/v1 REPLY_TOKENS
"""
import json
import sys

import openai

base_url, reply_tokens = sys.argv[1], int(sys.argv[2])
client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=30)
asked = dict(model="scripted", messages=[{"role": "user", "content": "Go"}],
             response_format={"type": "json_object"}, max_tokens=reply_tokens + 8,
             temperature=0, extra_body={"ignore_eos": True})

whole = client.chat.completions.create(**asked)
choice = whole.choices[0]
assert choice.finish_reason == "stop", choice
assert json.loads(choice.message.content) == {"city": "Paris", "days": [1, 2]}, choice.message
assert whole.usage.completion_tokens == reply_tokens, whole.usage

content, reasons = "", []
for chunk in client.chat.completions.create(**asked, stream=True):
    content += chunk.choices[0].delta.content or ""
    reasons.append(chunk.choices[0].finish_reason)
assert content == choice.message.content, content
assert reasons[-1] == "stop", reasons

schema = {"type": "object", "properties": {"city": {"type": "string"},
                                           "days": {"type": "array", "items": {"type": "integer"}}},
          "required": ["city", "days"], "additionalProperties": False}
structured = client.chat.completions.create(**{**asked, "response_format": {
    "type": "json_schema", "json_schema": {"name": "trip", "schema": schema, "strict": True}}})
assert structured.choices[0].finish_reason == "stop", structured
assert json.loads(structured.choices[0].message.content) == {"city": "Paris", "days": [1, 2]}

try:
    client.chat.completions.create(**{**asked, "response_format": {
        "type": "json_schema", "json_schema": {"name": "w", "schema": {
            "type": "object", "properties": {"days": {"type": "integer", "multipleOf": 7}}}}}})
    raise AssertionError("a schema with multipleOf was served")
except openai.BadRequestError as error:
    assert 'keyword \\"multipleOf\\" is not supported' in str(error) or \
        'keyword "multipleOf" is not supported' in str(error), error
print("openai json client: ok")
