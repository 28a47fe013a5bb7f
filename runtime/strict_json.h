// JSON read from files that attnscope does not trust (configs, tokenizer files, safetensors
// headers, checkpoint indexes; runtime/input_file.h reads them):
// parsed refusing what nlohmann::json would silently accept, and names quoted so that every
// message stays one line. For runtime's own readers; nlohmann::json stays out of public headers.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attnscope {

// How deeply objects and arrays may nest in an untrusted file. The deepest file attnscope reads
// (a tokenizer.json) nests under 10 levels; a file nested a million deep would overflow the stack
// of a recursive copy or dump later.
constexpr int kMaxJsonDepth = 64;

// Parses `text` in time linear in its length, refusing a NUL byte (nlohmann::json would stop
// there as if the text ended), nesting deeper than kMaxJsonDepth, and a duplicate key at any
// depth (nlohmann::json would keep the last one, and a file whose two readers disagree on which
// duplicate wins is a classic attack). Throws Error "<label>: <what> is not valid JSON: ...",
// "<label>: <what> nests objects and arrays deeper than 64 levels" or
// "<label>: <what>: duplicate key '<key>'". An empty `what` means the whole file:
// "<label>: not valid JSON: ...", "<label>: duplicate key '<key>'".
nlohmann::json parse_json_refusing_duplicates(std::string_view text, const std::string& label,
                                              const std::string& what);

// The parser's message without its "[json.exception.parse_error.101] " prefix.
std::string json_parser_message(const nlohmann::json::exception& error);

// A JSON value as an error message may quote it: its compact dump, on one line, invalid UTF-8
// replaced, cut to about 60 bytes ("...") so a huge untrusted value never fills a message.
std::string json_excerpt(const nlohmann::json& value);

// 'text' in single quotes, with control characters written as \xNN.
std::string single_quoted(std::string_view text);

}  // namespace attnscope
