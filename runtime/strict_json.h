// JSON read from files that attnscope does not trust (safetensors headers, checkpoint indexes):
// parsed refusing what nlohmann::json would silently accept, and names quoted so that every
// message stays one line. For runtime's own readers; nlohmann::json stays out of public headers.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attnscope {

// Parses `text`, refusing a NUL byte (nlohmann::json would stop there as if the text ended) and
// a duplicate key at any depth (nlohmann::json would keep the last one, and a file whose two
// readers disagree on which duplicate wins is a classic attack). Throws Error
// "<label>: <what> is not valid JSON: ..." or "<label>: <what>: duplicate key '<key>'".
nlohmann::json parse_json_refusing_duplicates(std::string_view text, const std::string& label,
                                              const std::string& what);

// 'text' in single quotes, with control characters written as \xNN.
std::string single_quoted(std::string_view text);

}  // namespace attnscope
