#include "models/tokenizer/utf8.h"

#include <array>
#include <cstdio>

namespace attnscope::tokenizer {

CodePoint decode_utf8(std::string_view text, std::size_t pos) {
  constexpr CodePoint kInvalid{0, 0};
  // The smallest value of each length: a smaller one is an overlong form.
  constexpr std::array<char32_t, 5> kSmallest{0, 0, 0x80, 0x800, 0x10000};
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return {lead, 1};
  // The lead byte gives the length and the top bits of the value.
  std::size_t length = 0;
  char32_t value = 0;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    value = lead & 0x1Fu;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    value = lead & 0x0Fu;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    value = lead & 0x07u;
  } else {
    return kInvalid;  // a continuation byte, or 0xF8..0xFF
  }
  if (text.size() - pos < length) return kInvalid;
  for (std::size_t i = 1; i < length; ++i) {
    const auto byte = static_cast<unsigned char>(text[pos + i]);
    if ((byte & 0xC0) != 0x80) return kInvalid;
    value = (value << 6) | (byte & 0x3Fu);
  }
  const bool surrogate = value >= 0xD800 && value <= 0xDFFF;
  if (value < kSmallest[length] || surrogate || value > 0x10FFFF) return kInvalid;
  return {value, length};
}

std::string encode_utf8(char32_t value) {
  if (value < 0x80) return std::string(1, static_cast<char>(value));
  if (value < 0x800) {
    return {static_cast<char>(0xC0 | (value >> 6)), static_cast<char>(0x80 | (value & 0x3F))};
  }
  if (value < 0x10000) {
    return {static_cast<char>(0xE0 | (value >> 12)),
            static_cast<char>(0x80 | ((value >> 6) & 0x3F)),
            static_cast<char>(0x80 | (value & 0x3F))};
  }
  return {static_cast<char>(0xF0 | (value >> 18)), static_cast<char>(0x80 | ((value >> 12) & 0x3F)),
          static_cast<char>(0x80 | ((value >> 6) & 0x3F)),
          static_cast<char>(0x80 | (value & 0x3F))};
}

std::vector<Utf8Run> utf8_runs(std::string_view text) {
  std::vector<Utf8Run> runs;
  std::size_t run_begin = 0;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t length = decode_utf8(text, pos).length;
    if (length > 0) {
      pos += length;
      continue;
    }
    if (pos > run_begin) runs.push_back({text.substr(run_begin, pos - run_begin), true});
    runs.push_back({text.substr(pos, 1), false});
    run_begin = ++pos;
  }
  if (text.size() > run_begin) runs.push_back({text.substr(run_begin), true});
  return runs;
}

std::string code_point_name(char32_t value) {
  std::array<char, 16> text{};
  std::snprintf(text.data(), text.size(), "U+%04X", static_cast<unsigned>(value));
  return text.data();
}

}  // namespace attnscope::tokenizer
