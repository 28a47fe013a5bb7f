// JSON read from files that attnscope does not trust (safetensors headers, checkpoint indexes,
// config.json, tokenizer files): the one file reader, parsing that refuses what nlohmann::json
// would silently accept, and names quoted so that every message stays one line. For the readers
// of the runtime and the models; nlohmann::json stays out of every other public header.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace attnscope {

// The bytes of the file at `path`. Throws Error naming the file when it does not exist, is not a
// regular file, is larger than `max_bytes` (a config.json: 16 MiB) or cannot be read.
std::string read_file(const std::filesystem::path& path,
                      std::uintmax_t max_bytes = std::numeric_limits<std::uintmax_t>::max());

// The parser's message without its "[json.exception.parse_error.101] " prefix.
std::string json_parser_message(const nlohmann::json::exception& error);

// Parses `text`, refusing a NUL byte (nlohmann::json would stop there as if the text ended) and
// a duplicate key at any depth (nlohmann::json would keep the last one, and a file whose two
// readers disagree on which duplicate wins is a classic attack). Throws Error
// "<label>: <what> is not valid JSON: ..." or "<label>: <what>: duplicate key '<key>'".
nlohmann::json parse_json_refusing_duplicates(std::string_view text, const std::string& label,
                                              const std::string& what);

// 'text' in single quotes, with control characters written as \xNN.
std::string single_quoted(std::string_view text);

}  // namespace attnscope
