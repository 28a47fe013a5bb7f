// libFuzzer harness for chat templates (models/tokenizer/jinja.h).
//
// Input: any bytes, parsed as a chat template; one that parses is rendered over a conversation
// (a system message, turns, an assistant's tool call, non-ASCII text), tools and the special
// tokens, as the server renders it. Checked: parsing and rendering either succeed or throw
// attnscope::Error; any other exception, crash, hang or sanitizer report is a bug (a render is
// bounded by the interpreter's caps). Cost: linear in the template and its output per run.
// Seeds: tests/fuzz/corpus/chat_template/ (the templates of tests/fixtures/chat_templates/).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "models/tokenizer/jinja.h"
#include "runtime/error.h"

namespace {

const attnscope::tokenizer::jinja::Value& variables() {
  static const auto value = attnscope::tokenizer::jinja::Value::parse(R"({
    "messages": [
      {"role": "system", "content": "  Be brief.  "},
      {"role": "user", "content": "Grüße, 世界! 2+2?"},
      {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 2}}}]},
      {"role": "tool", "content": "4"},
      {"role": "user", "content": ["not", "a", "string"]}
    ],
    "tools": [{"type": "function", "function": {"name": "add", "parameters": {"a": 1.5}}}],
    "documents": null,
    "add_generation_prompt": true,
    "bos_token": "<s>",
    "eos_token": "</s>"
  })");
  return value;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const attnscope::tokenizer::jinja::Template parsed(
        std::string_view(reinterpret_cast<const char*>(data), size));
    const std::string text = parsed.render(variables());
    if (text.size() > attnscope::tokenizer::jinja::kMaxRenderBytes) __builtin_trap();
  } catch (const attnscope::Error&) {
    // Not supported, malformed, or refused while rendering: as it should be.
  }
  return 0;
}
