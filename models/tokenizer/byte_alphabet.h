// The byte-level alphabet of GPT-2 and of the `tokenizers` library's ByteLevel pre-tokenizer and
// decoder: each of the 256 bytes is one printable character, so any byte string is a string of
// tokens that a JSON vocabulary can hold.
//
// The bytes that are printable Latin-1 characters ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF)
// stand for themselves; the other 68 (controls, space, 0x7F..0xA0, 0xAD) become U+0100, U+0101,
// ... in byte order. So byte 0x20 (space) is U+0120 'Ġ' and byte 0x0A (newline) is U+010A 'Ċ'.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace attnscope::tokenizer {

class ByteAlphabet {
 public:
  // The character of `byte` as UTF-8 (one or two bytes: all the characters are below U+0800).
  static const std::string& character_of_byte(unsigned char byte);
  // The bytes a token written in the alphabet stands for; nullopt when a character of `token` is
  // outside the alphabet or `token` is not UTF-8. O(token bytes).
  static std::optional<std::string> bytes_of_token(std::string_view token);
  // The first character of `token` that is outside the alphabet (for messages), or nullopt.
  static std::optional<char32_t> first_foreign_character(std::string_view token);
  // `bytes` written in the alphabet: the inverse of bytes_of_token. O(bytes).
  static std::string token_of_bytes(std::string_view bytes);
};

}  // namespace attnscope::tokenizer
