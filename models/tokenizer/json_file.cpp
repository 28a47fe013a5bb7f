#include "models/tokenizer/json_file.h"

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "runtime/error.h"

namespace attnscope::tokenizer {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  check(file.is_open(), path.string(), "cannot open the file");
  std::ostringstream content;
  content << file.rdbuf();
  check(!file.bad(), path.string(), "cannot read the file");
  return std::move(content).str();
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  try {
    return nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::parse_error& error) {
    // what() reads "[json.exception.parse_error.101] parse error at line 1, ...".
    const std::string_view message = error.what();
    throw Error(path.string(),
                "invalid JSON: " + std::string(message.substr(message.find(']') + 2)));
  }
}

std::string json_literal(std::string_view text) {
  constexpr std::size_t kShown = 60;
  std::string shown(text.substr(0, kShown));
  if (text.size() > kShown) shown += "...";
  return nlohmann::json(shown).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string hex_byte(int byte) {
  std::array<char, 8> text{};
  std::snprintf(text.data(), text.size(), "0x%02X", static_cast<unsigned>(byte));
  return text.data();
}

}  // namespace attnscope::tokenizer
