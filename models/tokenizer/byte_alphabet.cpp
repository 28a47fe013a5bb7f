#include "models/tokenizer/byte_alphabet.h"

#include "models/tokenizer/utf8.h"

namespace attnscope::tokenizer {
namespace {

struct Tables {
  static constexpr char32_t kEnd = 0x100 + 68;  // one past the largest character used
  std::array<std::string, 256> utf8_of_byte;
  std::array<int, kEnd> byte_of_character{};  // -1: not a character of the alphabet

  Tables() {
    byte_of_character.fill(-1);
    char32_t next_extra = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
      const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                             (byte >= 0xAE && byte <= 0xFF);
      const char32_t character = printable ? static_cast<char32_t>(byte) : next_extra++;
      utf8_of_byte[byte] = encode_utf8(character);
      byte_of_character[character] = byte;
    }
  }

  // The byte of the character at token[pos] and the character's length; byte -1 when it is not
  // in the alphabet (length 0 when the UTF-8 there is invalid).
  std::pair<int, std::size_t> byte_at(std::string_view token, std::size_t pos) const {
    const CodePoint character = decode_utf8(token, pos);
    if (character.length == 0 || character.value >= kEnd) return {-1, character.length};
    return {byte_of_character[character.value], character.length};
  }
};

const Tables& tables() {
  static const Tables built;
  return built;
}

}  // namespace

const std::string& ByteAlphabet::character_of_byte(unsigned char byte) {
  return tables().utf8_of_byte[byte];
}

std::optional<std::string> ByteAlphabet::bytes_of_token(std::string_view token) {
  std::string bytes;
  for (std::size_t pos = 0; pos < token.size();) {
    const auto [byte, length] = tables().byte_at(token, pos);
    if (byte < 0) return std::nullopt;
    bytes += static_cast<char>(byte);
    pos += length;
  }
  return bytes;
}

std::optional<char32_t> ByteAlphabet::first_foreign_character(std::string_view token) {
  for (std::size_t pos = 0; pos < token.size();) {
    const auto [byte, length] = tables().byte_at(token, pos);
    if (length == 0) return std::nullopt;
    if (byte < 0) return decode_utf8(token, pos).value;
    pos += length;
  }
  return std::nullopt;
}

std::string ByteAlphabet::token_of_bytes(std::string_view bytes) {
  std::string token;
  for (const char byte : bytes) token += character_of_byte(static_cast<unsigned char>(byte));
  return token;
}

}  // namespace attnscope::tokenizer
