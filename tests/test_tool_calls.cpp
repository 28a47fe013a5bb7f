// Tool calls in a chat model's reply (tools/attnscope/serve/tool_calls.h): the calls that Qwen2.5's
// and Llama 3.2's real chat templates (and templates written as Mistral's write calls) wrote into
// an assistant's turn, as transformers rendered them (tests/fixtures/chat_templates/cases.json,
// "tool calls: ..."), read back to the same names
// and to the arguments' text vLLM sends (Python's json.dumps); replies that are not calls stay
// text; and while a reply streams, no byte of a call is ever released as content.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fixture_paths.h"
#include "tools/attnscope/serve/tool_calls.h"

namespace {

using attnscope::cli::parse_reply;
using attnscope::cli::Reply;
using attnscope::cli::settled_content;
using attnscope::cli::ToolCallParser;
using OrderedJson = nlohmann::ordered_json;

OrderedJson tool_call_case(const std::string& name) {
  std::ifstream file(attnscope::testing::test_fixtures() + "/chat_templates/cases.json");
  REQUIRE(file);
  for (const OrderedJson& c : OrderedJson::parse(file)) {
    if (c["name"] == name) return c;
  }
  FAIL("no case " << name);
  return {};
}

// The text between the last `open` and the `close` after it.
std::string turn(const std::string& text, const std::string& open, const std::string& close) {
  const std::size_t start = text.rfind(open);
  REQUIRE(start != std::string::npos);
  const std::size_t body = start + open.size();
  return text.substr(body, text.find(close, body) - body);
}

void check_calls(const Reply& reply, const OrderedJson& expected) {
  REQUIRE(reply.tool_calls.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(reply.tool_calls[i].name == expected[i]["name"].get<std::string>());
    CHECK(reply.tool_calls[i].arguments == expected[i]["arguments"].get<std::string>());
  }
}

// Streams `text` a byte at a time: what is released as content never shrinks, and never holds a
// byte the whole reply does not give as content.
void check_streaming(const std::string& text, ToolCallParser parser) {
  const Reply whole = parse_reply(text, parser);
  std::size_t released = 0;
  for (std::size_t end = 0; end <= text.size(); ++end) {
    const std::size_t settled = settled_content(std::string_view(text).substr(0, end), parser);
    CAPTURE(end);
    CHECK(settled >= released);
    CHECK(settled <= end);
    released = settled;
  }
  CHECK(released <= whole.content.size());
  CHECK(whole.content.starts_with(text.substr(0, released)));
}

// A reply that holds no call it can read: all of it is content, whole and streamed.
void check_stays_text(const std::string& text, ToolCallParser parser) {
  CAPTURE(text);
  const Reply plain = parse_reply(text, parser);
  CHECK(plain.tool_calls.empty());
  CHECK(plain.content == text);
  check_streaming(text, parser);
}

}  // namespace

TEST_CASE("tool calls: hermes reads back what Qwen2.5's template wrote") {
  const OrderedJson c = tool_call_case("tool calls: qwen2.5");
  const std::string reply =
      turn(c["rendered"].get<std::string>(), "<|im_start|>assistant\n", "<|im_end|>");
  const Reply parsed = parse_reply(reply, ToolCallParser::hermes);
  CHECK(parsed.content == "Let me check.\n");  // the text before the first call, as vLLM's
  check_calls(parsed, c["tool_calls"]);
  check_streaming(reply, ToolCallParser::hermes);

  // A last call cut off before its closing tag still counts (the reply ended at eos).
  const std::string cut = reply.substr(0, reply.rfind("</tool_call>"));
  check_calls(parse_reply(cut, ToolCallParser::hermes), c["tool_calls"]);
  // One malformed call makes the whole reply text.
  for (const std::string& broken :
       {std::string("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }\n</tool_call>"),
        std::string("<tool_call>{\"name\": 1, \"arguments\": {}}</tool_call>"),
        std::string("<tool_call>{\"name\": \"f\", \"arguments\": \"{}\"}</tool_call>"),
        std::string("<tool_call>{\"name\": \"f\"}</tool_call>"),
        std::string("<tool_call>{\"name\": \"f\", \"arguments\": {}} trailing</tool_call>"),
        reply + "<tool_call>not json</tool_call>"}) {
    check_stays_text(broken, ToolCallParser::hermes);
  }
  // Arguments nested past kMaxJsonDepth are not read: the reply stays text.
  const std::string deep =
      "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(100, '[') +
      std::string(100, ']') + "}}</tool_call>";
  CHECK(parse_reply(deep, ToolCallParser::hermes).tool_calls.empty());
  // Plain text streams whole, holding back only what could begin <tool_call>.
  CHECK(settled_content("Hello <tool", ToolCallParser::hermes) == 6);
  CHECK(settled_content("Hello <tools>", ToolCallParser::hermes) == 13);
  CHECK(parse_reply("Hello", ToolCallParser::hermes).content == "Hello");
}

TEST_CASE("tool calls: llama3_json reads back what Llama 3.2's template wrote") {
  const OrderedJson c = tool_call_case("tool calls: llama3.2");
  const std::string reply = turn(c["rendered"].get<std::string>(),
                                 "<|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>");
  const Reply parsed = parse_reply(reply, ToolCallParser::llama3_json);
  CHECK(parsed.content.empty());
  check_calls(parsed, c["tool_calls"]);
  check_streaming(reply, ToolCallParser::llama3_json);

  // After <|python_tag|>, several joined by ";", "arguments" read as "parameters" is.
  const Reply two = parse_reply(
      "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"arguments\": "
      "{\"x\": [1, {\"y\": null}]}}",
      ToolCallParser::llama3_json);
  REQUIRE(two.tool_calls.size() == 2);
  CHECK(two.tool_calls[0].arguments == "{}");
  CHECK(two.tool_calls[1].name == "b");
  CHECK(two.tool_calls[1].arguments == R"({"x": [1, {"y": null}]})");
  // Text, a reply that only starts like a call, or a call followed by text: all text.
  for (const std::string& text :
       {std::string("The time is 10:00."),
        std::string("{\"name\": \"a\", \"parameters\": {}} and more"), std::string("{not json}"),
        std::string("  {\"name\": \"a\""), std::string("<|python_tag|>")}) {
    check_stays_text(text, ToolCallParser::llama3_json);
  }
  // Nothing is released until the first characters show the reply is no call.
  CHECK(settled_content("  ", ToolCallParser::llama3_json) == 0);
  CHECK(settled_content("<|python", ToolCallParser::llama3_json) == 0);
  CHECK(settled_content(" {\"na", ToolCallParser::llama3_json) == 0);
  CHECK(settled_content(" The", ToolCallParser::llama3_json) == 4);
}

TEST_CASE("tool calls: mistral reads back both ways Mistral's templates write calls") {
  for (const char* name : {"tool calls: mistral-nemo", "tool calls: mistral-small-3.2"}) {
    CAPTURE(name);
    const OrderedJson c = tool_call_case(name);
    const std::string reply = turn(c["rendered"].get<std::string>(), "[/INST]", "</s>");
    const Reply parsed = parse_reply(reply, ToolCallParser::mistral);
    CHECK(parsed.content == c["variables"]["messages"].back()["content"].get<std::string>());
    check_calls(parsed, c["tool_calls"]);
    check_streaming(reply, ToolCallParser::mistral);
  }
  // Without [CALL_ID] (Devstral's), and what is not a call: all text.
  const Reply devstral =
      parse_reply("[TOOL_CALLS]f[ARGS]{\"a\": 1}[TOOL_CALLS]g[ARGS] {}", ToolCallParser::mistral);
  REQUIRE(devstral.tool_calls.size() == 2);
  CHECK(devstral.tool_calls[1].name == "g");
  CHECK(devstral.tool_calls[1].arguments == "{}");
  for (const std::string& text :
       {std::string("[TOOL_CALLS]"), std::string("[TOOL_CALLS][]"),
        std::string("[TOOL_CALLS][{\"name\": \"f\"}]"), std::string("[TOOL_CALLS]f[ARGS][1]"),
        std::string("[TOOL_CALLS]f[ARGS]{} then text"),
        std::string("[TOOL_CALLS]two words[ARGS]{}"), std::string("no calls [TOOL_CALL")}) {
    check_stays_text(text, ToolCallParser::mistral);
  }
  CHECK(settled_content("Sure [TOOL", ToolCallParser::mistral) == 5);
}

TEST_CASE("tool calls: the parsers by name") {
  CHECK(attnscope::cli::tool_call_parser_named("hermes") == ToolCallParser::hermes);
  CHECK(attnscope::cli::tool_call_parser_named("llama3_json") == ToolCallParser::llama3_json);
  CHECK(attnscope::cli::tool_call_parser_named("mistral") == ToolCallParser::mistral);
  CHECK_FALSE(attnscope::cli::tool_call_parser_named("pythonic").has_value());
}

TEST_CASE("tool calls: a forced call's reply is its arguments, or a list of calls") {
  using attnscope::cli::forced_calls;
  using attnscope::cli::ForcedCall;
  using attnscope::cli::ToolCall;
  const ForcedCall named{"get_weather"};
  const std::vector<ToolCall> one = forced_calls(" {\"city\":\"Paris\",\"days\":[1,2]}\n", named);
  REQUIRE(one.size() == 1);
  CHECK(one[0].name == "get_weather");
  CHECK(one[0].arguments == R"({"city": "Paris", "days": [1, 2]})");  // as Python's json.dumps
  CHECK(forced_calls("{\"city\": \"Par", named).empty());             // cut short by max_tokens
  CHECK(forced_calls("[{}]", named).empty());
  CHECK(forced_calls("{} {}", named).empty());

  const ForcedCall required{""};
  const std::vector<ToolCall> two = forced_calls(
      "[{\"name\": \"f\", \"parameters\": {\"q\": \"x\"}},\n {\"name\": \"g\", \"parameters\": "
      "{}}]",
      required);
  REQUIRE(two.size() == 2);
  CHECK(two[0].name == "f");
  CHECK(two[0].arguments == R"({"q": "x"})");
  CHECK(two[1].name == "g");
  CHECK(two[1].arguments == "{}");
  CHECK(forced_calls("[]", required).empty());
  CHECK(forced_calls("[{\"name\": \"f\"}]", required).empty());                    // no parameters
  CHECK(forced_calls("{\"name\": \"f\", \"parameters\": {}}", required).empty());  // not a list
}
