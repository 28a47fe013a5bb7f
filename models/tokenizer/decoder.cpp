#include "models/tokenizer/decoder.h"

#include <charconv>
#include <optional>

#include "models/tokenizer/byte_alphabet.h"
#include "models/tokenizer/json_file.h"
#include "models/tokenizer/normalizer.h"
#include "models/tokenizer/utf8.h"
#include "runtime/error.h"

namespace attnscope::tokenizer {
namespace {

// The byte a ByteFallback token "<0xHH>" stands for (hex digits in either case, as the library
// reads them), or nullopt.
std::optional<char> fallback_byte(std::string_view token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return std::nullopt;
  unsigned value = 0;
  const auto [end, error] = std::from_chars(token.data() + 3, token.data() + 5, value, 16);
  if (error != std::errc() || end != token.data() + 5) return std::nullopt;
  return static_cast<char>(value);
}

std::string string_field(const nlohmann::json& spec, const char* key, const std::string& where,
                         const std::string& name) {
  check(spec.contains(key) && spec[key].is_string(), where,
        name + ": expected a string \"" + key + "\"");
  return spec[key].get<std::string>();
}

std::size_t count_field(const nlohmann::json& spec, const char* key, const std::string& where,
                        const std::string& name) {
  check(
      spec.contains(key) && spec[key].is_number_unsigned() && spec[key].get<std::uint64_t>() < 1024,
      where, name + ": expected \"" + key + "\", a count below 1024");
  return spec[key].get<std::size_t>();
}

}  // namespace

Decoder::Decoder(const nlohmann::json& spec, const std::string& where) {
  const std::string type = component_type(spec, "decoder", where);
  if (type == "ByteLevel") {
    byte_level_ = true;
    return;
  }
  check(type == "Sequence", where,
        "decoder " + json_literal(type) + " is not supported (only ByteLevel and Sequence)");
  const nlohmann::json& steps = spec.value("decoders", nlohmann::json());
  check(steps.is_array(), where, "decoder Sequence: expected a \"decoders\" list");
  for (const nlohmann::json& step : steps) add_step(step, where);
}

void Decoder::add_step(const nlohmann::json& spec, const std::string& where) {
  const std::string type = component_type(spec, "decoder Sequence", where);
  const std::string name = "decoder " + type;
  const auto check_order = [&](bool in_order, const std::string& rule) {
    check(in_order, where,
          name + ": attnscope supports Replace, ByteFallback and Fuse, then Strip (" + rule + ")");
  };
  if (type == "Replace") {
    check_order(strips_.empty(), "Replace after Strip");
    const nlohmann::json& pattern = spec.value("pattern", nlohmann::json());
    check(pattern.is_object() && pattern.contains("String") && pattern["String"].is_string() &&
              !pattern["String"].get<std::string>().empty(),
          where, name + ": only a non-empty {\"String\": ...} pattern is supported");
    replaces_.push_back(
        {pattern["String"].get<std::string>(), string_field(spec, "content", where, name)});
  } else if (type == "ByteFallback") {
    check_order(!byte_fallback_ && !fused_, "ByteFallback twice or after Fuse");
    byte_fallback_ = true;
  } else if (type == "Fuse") {
    check_order(!fused_, "Fuse twice");
    fused_ = true;
  } else if (type == "Strip") {
    check_order(fused_, "Strip before Fuse would strip every token");
    const std::string character = string_field(spec, "content", where, name);
    check(!character.empty() && decode_utf8(character, 0).length == character.size(), where,
          name + ": \"content\" must be one character");
    strips_.push_back({character, count_field(spec, "start", where, name),
                       count_field(spec, "stop", where, name)});
  } else {
    throw Error(where, name +
                           " is not supported in a decoder Sequence (only Replace, ByteFallback, "
                           "Fuse and Strip)");
  }
}

std::string Decoder::token_bytes(std::string_view content) const {
  if (byte_level_) {
    std::optional<std::string> bytes = ByteAlphabet::bytes_of_token(content);
    return bytes ? std::move(*bytes) : std::string(content);
  }
  std::string token(content);
  for (const Replace& replace : replaces_) {
    token = replace_all(token, replace.pattern, replace.content);
  }
  if (byte_fallback_) {
    if (const std::optional<char> byte = fallback_byte(token)) return std::string(1, *byte);
  }
  return token;
}

void Decoder::finish(std::string& text) const {
  for (const Strip& strip : strips_) {
    std::size_t start = 0;
    const std::string_view whole = text;
    for (std::size_t i = 0; i < strip.start && whole.substr(start).starts_with(strip.character);
         ++i) {
      start += strip.character.size();
    }
    std::size_t stop = text.size();
    for (std::size_t i = 0; i < strip.stop && stop >= start + strip.character.size() &&
                            whole.substr(0, stop).ends_with(strip.character);
         ++i) {
      stop -= strip.character.size();
    }
    text = text.substr(start, stop - start);
  }
}

}  // namespace attnscope::tokenizer
