// Reading the JSON files of tokenizers, the type of each of their parts, and quoting their text
// and bytes in one-line messages.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attnscope::tokenizer {

// The parsed JSON of a file (read by runtime/input_file.h under the tokenizer files' size cap,
// parsed by runtime/strict_json.h: no duplicate keys, nesting capped). Throws Error naming the
// file when it cannot be read, or with the parser's message.
nlohmann::json read_json_file(const std::filesystem::path& path);

// The "type" of one part of a tokenizer.json ("normalizer", "decoder", a Sequence's step, ...):
// throws Error naming `part` unless `spec` is an object with a string "type".
std::string component_type(const nlohmann::json& spec, std::string_view part,
                           const std::string& where);

// `text` as a JSON string literal, cut after 60 bytes: safe to put in a one-line message.
std::string json_literal(std::string_view text);

// "0x7A": a byte as messages name it.
std::string hex_byte(int byte);

}  // namespace attnscope::tokenizer
