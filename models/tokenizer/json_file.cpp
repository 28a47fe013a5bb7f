#include "models/tokenizer/json_file.h"

#include <array>
#include <cstdio>

#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/strict_json.h"

namespace attnscope::tokenizer {

nlohmann::json read_json_file(const std::filesystem::path& path) {
  const std::string text = read_input_file(path, kMaxTokenizerBytes, "a tokenizer file");
  return parse_json_refusing_duplicates(text, path.string(), "");
}

std::string component_type(const nlohmann::json& spec, std::string_view part,
                           const std::string& where) {
  check(spec.is_object() && spec.contains("type") && spec["type"].is_string(), where,
        std::string(part) + ": expected an object with a \"type\"");
  return spec["type"].get<std::string>();
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
