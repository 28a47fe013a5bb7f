// Chat templates (models/tokenizer/jinja.h): every case of tests/fixtures/chat_templates/cases.json
// (real and family-style chat templates and a template of the language's constructs, rendered by
// transformers' own jinja2 environment: tools/fixtures/make_chat_template_cases.py) renders to the
// same text here; a statement the interpreter does not support is refused when the template is
// parsed, a filter, test, method or function it does not implement when a render reaches it, each
// with its line; a render always ends within its limits; and a SentencePiece checkpoint's
// rendered conversation tokenizes to transformers' ids.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "fixture_paths.h"
#include "models/tokenizer/chat_template.h"
#include "models/tokenizer/jinja.h"
#include "models/tokenizer/tokenizer_json.h"
#include "runtime/error.h"
#include "safetensors_writer.h"

namespace {

using attnscope::Error;
using attnscope::tokenizer::ChatEnding;
using attnscope::tokenizer::ChatTemplate;
using attnscope::tokenizer::Conversation;
using attnscope::tokenizer::ConversationError;
using attnscope::tokenizer::read_conversation;
using attnscope::tokenizer::jinja::Template;
using attnscope::tokenizer::jinja::Value;

Value read_cases() {
  const std::string path = attnscope::testing::test_fixtures() + "/chat_templates/cases.json";
  std::ifstream file(path);
  REQUIRE_MESSAGE(file, "cannot open " << path);
  return Value::parse(file);
}

std::string render(const std::string& source, const Value& variables = Value::object()) {
  return Template(source).render(variables);
}

std::string parse_error(const std::string& source) {
  try {
    Template parsed(source);
  } catch (const Error& error) {
    return error.what();
  }
  return "(parsed)";
}

std::string render_error(const std::string& source, const Value& variables = Value::object()) {
  try {
    render(source, variables);
  } catch (const Error& error) {
    return error.what();
  }
  return "(rendered)";
}

}  // namespace

TEST_CASE("chat templates render as transformers renders them") {
  const Value cases = read_cases();
  REQUIRE(cases.size() >= 40);
  int errors = 0;
  for (const Value& c : cases) {
    CAPTURE(c["name"].get<std::string>());
    if (c.contains("continue_final_message")) continue;  // the next test's
    const Template parsed(c["template"].get<std::string>());
    if (c.contains("error")) {
      ++errors;
      // The template's own message (raise_exception) reaches the caller.
      const std::string message = render_error(c["template"].get<std::string>(), c["variables"]);
      CHECK(message.find(c["error"].get<std::string>()) != std::string::npos);
      continue;
    }
    CHECK(parsed.render(c["variables"]) == c["rendered"].get<std::string>());
  }
  CHECK(errors == 1);
}

TEST_CASE("chat templates: the final message left open, as transformers' continue_final_message") {
  int continued = 0;
  for (const Value& c : read_cases()) {
    if (!c.contains("continue_final_message")) continue;
    CAPTURE(c["name"].get<std::string>());
    ++continued;
    Value special_tokens = c["variables"];
    special_tokens.erase("messages");
    const ChatTemplate chat(c["template"].get<std::string>(), special_tokens);
    const Conversation conversation{c["variables"]["messages"], nullptr};
    if (c.contains("error")) {  // no text to continue: refused, as transformers refuses it
      CHECK_THROWS_AS(chat.render(conversation, ChatEnding::final_message_open), Error);
      continue;
    }
    CHECK(chat.render(conversation, ChatEnding::final_message_open) ==
          c["rendered"].get<std::string>());
  }
  CHECK(continued == 6);
  // A template that never writes the message out, or never reads a message's content.
  const Conversation hi{Value::array({{{"role", "assistant"}, {"content", "hi"}}}), nullptr};
  CHECK_THROWS_WITH_AS(ChatTemplate("{{ messages[0].content | upper }}", Value::object())
                           .render(hi, ChatEnding::final_message_open),
                       doctest::Contains("the final message does not appear"), Error);
  CHECK_THROWS_WITH_AS(ChatTemplate("{{ messages | length }}", Value::object())
                           .render(hi, ChatEnding::final_message_open),
                       doctest::Contains("the chat template never reads a message's content"),
                       Error);
}

TEST_CASE("chat templates: what is not supported is refused when parsed, with its line") {
  CHECK(parse_error("a\n{% call m() %}x{% endcall %}") ==
        "chat template: line 2: the statement {% call %} is not supported");
  CHECK(parse_error("{% macro m(a b) %}{% endmacro %}") ==
        "chat template: line 1: expected , or ) in the macro's parameters");
  CHECK(parse_error("{% for x in y %}{% macro m() %}{% break %}{% endmacro %}{% endfor %}") ==
        "chat template: line 1: {% break %} outside a loop");
  CHECK(parse_error("{% raw %}x{% endraw %}") ==
        "chat template: line 1: the statement {% raw %} is not supported");
  CHECK(parse_error("{{ x.strip()(2) }}") ==
        "chat template: line 1: only global functions can be called");
  CHECK(parse_error("{% if x %}a") == "chat template: line 1: {% endif %} is missing");
  CHECK(parse_error("{% for x in y %}\n{% if x %}a{% endfor %}") ==
        "chat template: line 2: {% endfor %} where {% endif %} was expected (the block opened on "
        "line 2)");
  CHECK(parse_error("{% endif %}") == "chat template: line 1: {% endif %} without its opening tag");
  CHECK(parse_error("{% break %}") == "chat template: line 1: {% break %} outside a loop");
  CHECK(parse_error("{{ 1 < 2 < 3 }}") ==
        "chat template: line 1: chained comparisons (a < b < c) are not supported");
  CHECK(parse_error("{{ 'open }}") == "chat template: line 1: a string is never closed");
  CHECK(parse_error("{{ x ") == "chat template: line 1: a tag {{ is never closed");
  CHECK(parse_error("{# x ") == "chat template: line 1: a comment {# is never closed");
  CHECK(parse_error("{{ x y }}") == "chat template: line 1: unexpected 'y'");
  CHECK(parse_error("{{ ; }}") == "chat template: line 1: unexpected character ';'");
  CHECK(parse_error("{% set a, b = 1, 2 %}") ==
        "chat template: line 1: only {% set name = value %} and {% set name %} ... {% endset %} "
        "are supported (not a tuple or a filtered block)");
  CHECK(parse_error("{% for x in y %}{% set t %}{% break %}{% endset %}{% endfor %}") ==
        "chat template: line 1: {% break %} outside a loop");
  CHECK(parse_error("{{ 99999999999999999999 }}") ==
        "chat template: line 1: the integer 99999999999999999999 is out of range");
  CHECK(parse_error("{{ '\\u12' }}") == "chat template: line 1: a truncated \\u escape");
  // Nesting deep enough to overflow a recursive parser is refused instead.
  CHECK(parse_error("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}") ==
        "chat template: line 1: expressions nest deeper than 256 levels");
  std::string nested_blocks;
  for (int i = 0; i < 1000; ++i) nested_blocks += "{% if x %}";
  CHECK(parse_error(nested_blocks) == "chat template: line 1: blocks nest deeper than 256 levels");
}

TEST_CASE("chat templates: errors while rendering name the line and the reason") {
  CHECK(render_error("\n{{ raise_exception('no ' ~ 'way') }}") ==
        "chat template: line 2: raise_exception: no way");
  CHECK(render_error("{{ missing.attribute }}") ==
        "chat template: line 1: cannot read .attribute of an undefined value");
  CHECK(render_error("{{ 'a' + 1 }}") ==
        "chat template: line 1: unsupported operand types for +: str and int");
  CHECK(render_error("{{ 1 // 0 }}") == "chat template: line 1: division by zero");
  CHECK(render_error("{% set d = {} %}{% set d.x = 1 %}") ==
        "chat template: line 1: cannot assign an attribute of d, which is not a namespace");
  CHECK(render_error("{% for a, b in [1] %}{% endfor %}") ==
        "chat template: line 1: cannot unpack a int into 2 loop variables");
  CHECK(render_error("{{ x | tojson }}") == "chat template: tojson of an undefined value");
  // Names are looked up when they run: what the interpreter does not implement, or a macro whose
  // definition has not run (yet, or in an untaken branch), is refused by the render reaching it.
  const std::string no_macro =
      "chat template: line 1: the function m() is not supported, nor a macro whose definition "
      "has run";
  CHECK(render_error("{% if false %}{% macro m() %}{% endmacro %}{% endif %}{{ m() }}") ==
        no_macro);
  CHECK(render_error("{{ m() }}{% macro m() %}{% endmacro %}") == no_macro);
  CHECK(render_error("\n{{ cycler(1) }}") ==
        "chat template: line 2: the function cycler() is not supported, nor a macro whose "
        "definition has run");
  CHECK(render_error("{{ x | wordwrap }}") ==
        "chat template: line 1: the filter 'wordwrap' is not supported");
  CHECK(render_error("{{ x is callable }}") ==
        "chat template: line 1: the test 'callable' is not supported");
  CHECK(render_error("{{ 'a'.center(3) }}") ==
        "chat template: line 1: the method center() is not supported");
  // transformers' sandbox keeps lists immutable: append() is refused there too.
  CHECK(render_error("{{ [].append(1) }}") ==
        "chat template: line 1: the method append() is not supported");
  CHECK(render_error("{{ {}.strip() }}") == "chat template: line 1: a dict has no method strip()");
  CHECK(render("{% if false %}{{ x | wordwrap }}{{ cycler() }}{{ [].append(1) }}{% endif %}ok") ==
        "ok");
  // A macro may call itself; runaway recursion ends at the nesting bound, a wide one at the
  // step bound.
  CHECK(render(
            "{% macro m(n) %}{{ n }}{% if n %}{{ m(n - 1) }}{% endif %}{% endmacro %}{{ m(3) }}") ==
        "3210");
  CHECK(render_error("{% macro m(n) %}{{ m(n + 1) }}{% endmacro %}{{ m(0) }}") ==
        "chat template: line 1: the template nests deeper than 1024 levels while rendering");
  CHECK(render_error("{% macro m(n) %}{% if n %}{{ m(n - 1) }}{{ m(n - 1) }}{% endif %}"
                     "{% endmacro %}{{ m(40) }}") ==
        "chat template: line 1: the template runs more than 1000000 steps");
  // str.format's subset: {}, {0}, {name}.
  CHECK(render_error("{{ 'a{'.format() }}") ==
        "chat template: line 1: format: a '{' is never closed");
  CHECK(render_error("{{ 'a}b'.format() }}") ==
        "chat template: line 1: format: a single '}' in the string");
  CHECK(render_error("{{ '{:>3}'.format(1) }}") ==
        "chat template: line 1: format: the field {:>3} is not supported (only {}, {0} and "
        "{name})");
  CHECK(render_error("{{ '{} {0}'.format(1) }}") ==
        "chat template: line 1: format: cannot mix {} and numbered fields");
  CHECK(render_error("{{ '{1}'.format(0) }}") ==
        "chat template: line 1: format: no positional argument 1");
  CHECK(render_error("{{ '{99999999999}'.format(0) }}") ==
        "chat template: line 1: format: no positional argument 1");
  CHECK(render_error("{{ '{x}'.format(y=1) }}") ==
        "chat template: line 1: format: no argument named x");
  CHECK(render_error("{{ [1] | tojson(separators=',') }}") ==
        "chat template: line 1: tojson's separators must be two strings (between items, after a "
        "key)");
  CHECK(render_error("{{ [1] | tojson(indent=1.5) }}") ==
        "chat template: line 1: tojson's indent must be an int or a string, not a float");
  CHECK(render_error("{{ [[1, 2], [3]] | tojson(indent=16777216) }}") ==
        "chat template: tojson's text passes its limit");
  CHECK(render_error("{{ 1 | indent }}") ==
        "chat template: line 1: indent's value must be a string, not a int");
  CHECK(render_error("{{ 'ab' | indent(none) }}") ==
        "chat template: line 1: indent's width must be an int or a string, not a none");
  CHECK(render_error("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}") ==
        "chat template: line 1: m() takes 1 arguments, not 2");
  CHECK(render_error("{% macro m(a) %}{% endmacro %}{{ m(b=1) }}") ==
        "chat template: line 1: m() has no parameter b");
  // Macros each calling the one before, each body 100 blocks deep: 10 of them render, 20
  // nest past kMaxRenderDepth and are refused, not a stack overflow.
  std::string chain = "{% macro m0() %}x{% endmacro %}";
  for (int i = 1; i < 20; ++i) {
    std::string body;
    for (int level = 0; level < 100; ++level) body += "{% if true %}";
    body += "{{ m" + std::to_string(i - 1) + "() }}";
    for (int level = 0; level < 100; ++level) body += "{% endif %}";
    chain += "{% macro m" + std::to_string(i) + "() %}" + body + "{% endmacro %}";
  }
  CHECK(render(chain + "{{ m9() }}") == "x");
  CHECK(render_error(chain + "{{ m19() }}") ==
        "chat template: line 1: the template nests deeper than 1024 levels while rendering");
  // Python's ints are unbounded; one that leaves int64 is refused, never wrapped.
  const std::string overflow = "chat template: line 1: an int result does not fit in 64 bits";
  CHECK(render_error("{{ 9223372036854775807 + 1 }}") == overflow);
  CHECK(render_error("{{ 3037000500 * 3037000500 }}") == overflow);
  CHECK(render_error("{{ -(-9223372036854775807 - 1) }}") == overflow);
  CHECK(render_error("{{ (-9223372036854775807 - 1) // -1 }}") == overflow);
  CHECK(render_error("{{ (-9223372036854775807 - 1) | abs }}") == overflow);
  CHECK(render_error("{{ 10 ** 19 }}") == "chat template: line 1: the number 1e+19 is no int64");
  CHECK(render(
            "{{ (-9223372036854775807 - 1) % -1 }} {{ 7 // -1 }} {{ 9223372036854775807 % -2 }}") ==
        "0 -7 -1");
  CHECK(render("{{ range(0, 9223372036854775807, 4611686018427387904) | list }}") ==
        "[0, 4611686018427387904]");
  // Ranges across all of int64, as Python gives them.
  CHECK(render("{{ range(-9223372036854775807 - 1, 9223372036854775807, 4611686018427387904) | "
               "list }} {{ range(5, -5, -3) | list }} {{ range(-9223372036854775807 - 1, "
               "9223372036854775807, 9223372036854775807) | list }} {{ range(9223372036854775807, "
               "-9223372036854775807 - 1, -9223372036854775807 - 1) | list }}") ==
        "[-9223372036854775808, -4611686018427387904, 0, 4611686018427387904] [5, 2, -1, -4] "
        "[-9223372036854775808, -1, 9223372036854775806] [9223372036854775807, -1]");
  CHECK(render("{{ [1, 2, 3][::9223372036854775807] }}") == "[1]");
}

TEST_CASE("chat templates: a render ends within its limits") {
  // Output, ranges and repeated values are capped, so no template can exhaust memory.
  CHECK(render_error("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}") ==
        "chat template: line 1: the rendered text passes 16 MiB");
  CHECK(render_error("{{ range(1000000000) | length }}") ==
        "chat template: line 1: a range passes the render's size limit");
  CHECK(render_error("{{ 'x' * 100000000 }}") ==
        "chat template: line 1: a repeated value passes the render's size limit");
  CHECK(render_error("{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}"
                     "{% endfor %}") ==
        "chat template: line 1: the template runs more than 1000000 steps");
}

TEST_CASE("chat templates: newlines as jinja2 reads them, and strftime_now in local time") {
  // \r\n and \r read as \n; one final newline is dropped (keep_trailing_newline off).
  CHECK(render("a\r\nb\rc\n") == "a\nb\nc");
  CHECK(render("a\n\n") == "a\n");
  // Control characters as Python's repr and json.dumps escape them.
  CHECK(render("{{ ['a\\x1bb\\x7f'] }}|{{ 'a\\x01' | tojson }}") ==
        "['a\\x1bb\\x7f']|\"a\\u0001\"");
  // Float literals past a double's range read as Python reads them (found by fuzz_chat_template).
  CHECK(render("{{ 1e400 }} {{ -1e400 }} {{ 1e-400 }} {{ 1e400 | tojson }}") ==
        "inf -inf 0.0 Infinity");
  CHECK(render("{% if true %}\r\nx{% endif %}") == "x");
  std::array<char, 16> year{};
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(year.data(), year.size(), "%Y", &local);
  CHECK(render("{{ strftime_now('%Y') }}") == std::string(year.data()));
}

TEST_CASE("chat templates: found where transformers saves them, with the special tokens") {
  const attnscope::testing::TempDir dir;
  const Value gpt2_defaults = {{"bos_token", "<|endoftext|>"}, {"eos_token", "<|endoftext|>"}};
  const Conversation hi{Value::array({{{"role", "user"}, {"content", "hi"}}}), nullptr};
  const std::string source = "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}";
  CHECK_FALSE(ChatTemplate::find_in(dir.path().string(), gpt2_defaults).has_value());

  // tokenizer_config.json: a string template; tokens as strings or AddedToken objects, over the
  // defaults.
  attnscope::testing::write_file(
      dir.file("tokenizer_config.json"),
      Value{{"chat_template", source}, {"bos_token", {{"content", "<s>"}, {"lstrip", false}}}}
          .dump());
  const auto from_config = ChatTemplate::find_in(dir.path().string(), gpt2_defaults);
  REQUIRE(from_config.has_value());
  CHECK(from_config->render(hi, ChatEnding::assistant_turn_opened) == "<s>hi<|endoftext|>");

  // A list of named templates: "default".
  attnscope::testing::write_file(dir.file("tokenizer_config.json"),
                                 Value{{"chat_template",
                                        {{{"name", "tool_use"}, {"template", "tools"}},
                                         {{"name", "default"}, {"template", source}}}},
                                       {"eos_token", "</s>"}}
                                     .dump());
  CHECK(ChatTemplate::find_in(dir.path().string(), Value::object())
            ->render(hi, ChatEnding::assistant_turn_opened) == "hi</s>");
  attnscope::testing::write_file(
      dir.file("tokenizer_config.json"),
      Value{{"chat_template", {{{"name", "tool_use"}, {"template", "x"}}}}}.dump());
  CHECK_THROWS_WITH_AS(
      ChatTemplate::find_in(dir.path().string(), Value::object()),
      doctest::Contains("chat_template is a list without a template named \"default\""), Error);

  // chat_template.jinja comes first; its errors name the file.
  attnscope::testing::write_file(dir.file("chat_template.jinja"), "[{{ messages | length }}]\n");
  CHECK(ChatTemplate::find_in(dir.path().string(), Value::object())
            ->render(hi, ChatEnding::assistant_turn_opened) == "[1]");
  attnscope::testing::write_file(dir.file("chat_template.jinja"), "{% call m() %}{% endcall %}");
  CHECK_THROWS_WITH_AS(ChatTemplate::find_in(dir.path().string(), Value::object()),
                       (dir.file("chat_template.jinja") +
                        ": chat template: line 1: the statement {% call %} is not supported")
                           .c_str(),
                       Error);
}

// TinyLlama-Chat's template saved beside a SentencePiece tokenizer (chat_template.jinja, with
// <s> and </s> from tokenizer_config.json): transformers' apply_chat_template text and ids
// (tools/fixtures/make_sentencepiece_tokenizer_cases.py), rendered here and then tokenized
// without adding special tokens, as serve and generate --chat do.
TEST_CASE("chat templates: a conversation as a chat completions request sends it") {
  const Conversation read = read_conversation(Value::parse(R"({
    "model": "m",
    "messages": [
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "tool_calls": [{"z": 1, "a": 2}]}
    ],
    "tools": [{"type": "function", "function": {"name": "f"}}]
  })"));
  CHECK(read.messages[0]["content"] == "a\nb");  // text parts, joined
  CHECK(read.messages[1]["content"].is_null());
  CHECK(read.messages[1]["tool_calls"].dump() == R"([{"z":1,"a":2}])");  // keys in their order
  CHECK(read.tools[0]["function"]["name"] == "f");
  CHECK(read_conversation(Value::parse(R"({"messages": [{"role": "user"}]})")).tools.is_null());
  const auto error = [](const char* request) {
    try {
      read_conversation(Value::parse(request));
    } catch (const ConversationError& e) {
      return e.field + " | " + e.what();
    }
    return std::string("(read)");
  };
  CHECK(error("{}") == "messages | messages is required");
  CHECK(error(R"({"messages": []})") ==
        R"(messages | messages must be a non-empty list of {"role", "content"} objects)");
  CHECK(error(R"({"messages": [{"role": "user"}, {"content": "x"}]})") ==
        "messages[1] | messages[1] must be an object with a string role");
  CHECK(error(R"({"messages": [{"role": "user", "content": 5}]})") ==
        "messages[0].content | messages[0].content must be a string, null or a list of text parts");
  CHECK(
      error(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})") ==
      R"(messages[0].content | messages[0].content: only text parts ({"type": "text", "text": ...}) are served)");
  CHECK(error(R"({"messages": [{"role": "user"}], "tools": {}})") ==
        "tools | tools must be a list");
  CHECK(error(R"({"messages": [{"role": "user"}], "chat_template_kwargs": []})") ==
        "chat_template_kwargs | chat_template_kwargs must be an object");
  CHECK(error(R"({"messages": [{"role": "user"}], "chat_template_kwargs": {"tools": []}})") ==
        "chat_template_kwargs | chat_template_kwargs cannot set tools (the request's own field)");

  // chat_template_kwargs reach the template as transformers' keyword arguments do: Qwen3's
  // thinking switch, rendered as transformers rendered it.
  for (const Value& c : read_cases()) {
    const std::string name = c["name"].get<std::string>();
    if (!name.starts_with("thinking switch:")) continue;
    CAPTURE(name);
    Value request = {{"messages", c["variables"]["messages"]}};
    if (c["variables"].contains("enable_thinking")) {
      request["chat_template_kwargs"] = {{"enable_thinking", c["variables"]["enable_thinking"]}};
    }
    CHECK(ChatTemplate(c["template"].get<std::string>(), Value::object())
              .render(read_conversation(request), ChatEnding::assistant_turn_opened) ==
          c["rendered"].get<std::string>());
  }
}

TEST_CASE("chat templates: a SentencePiece checkpoint's conversation, rendered and tokenized") {
  using attnscope::tokenizer::TokenizerJson;
  const std::string dir = attnscope::testing::test_fixtures() + "/tokenizer_json/llama2";
  const std::optional<ChatTemplate> chat = ChatTemplate::find_in(dir, Value::object());
  REQUIRE(chat.has_value());
  const TokenizerJson tokenizer = TokenizerJson::load(dir);
  std::ifstream file(dir + "/chat.json");
  REQUIRE(file);
  const Value cases = Value::parse(file);
  REQUIRE(cases.size() == 4);
  for (const Value& c : cases) {
    const std::string text =
        chat->render({c["messages"], nullptr}, c["add_generation_prompt"].get<bool>()
                                                   ? ChatEnding::assistant_turn_opened
                                                   : ChatEnding::after_last_message);
    CHECK(text == c["text"].get<std::string>());
    std::vector<std::int32_t> expected;
    for (const Value& id : c["ids"]) expected.push_back(id.get<std::int32_t>());
    CHECK(tokenizer.encode(text, false) == expected);
  }
}
