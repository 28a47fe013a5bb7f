#include "models/tokenizer/symbol_alphabet.h"

#include <algorithm>

#include "models/tokenizer/utf8.h"

namespace attnscope::tokenizer {

SymbolAlphabet SymbolAlphabet::bytes(const std::array<std::int32_t, 256>& byte_token) {
  SymbolAlphabet alphabet;
  alphabet.byte_token_ = byte_token;
  return alphabet;
}

SymbolAlphabet SymbolAlphabet::characters(Characters characters) {
  SymbolAlphabet alphabet;
  alphabet.characters_ = std::move(characters);
  return alphabet;
}

void SymbolAlphabet::split(std::string_view piece, std::vector<std::int32_t>& symbols) const {
  if (byte_token_) {
    for (const char byte : piece) {
      symbols.push_back((*byte_token_)[static_cast<unsigned char>(byte)]);
    }
    return;
  }
  bool after_unknown = false;  // the last symbol is an unknown token that may absorb the next
  for (std::size_t pos = 0; pos < piece.size();) {
    const std::size_t length = std::max<std::size_t>(decode_utf8(piece, pos).length, 1);
    const std::string_view character = piece.substr(pos, length);
    pos += length;
    if (const auto found = characters_.token_of_character.find(std::string(character));
        found != characters_.token_of_character.end()) {
      symbols.push_back(found->second);
      after_unknown = false;
    } else if (characters_.fallback_token) {
      for (const char byte : character) {
        symbols.push_back((*characters_.fallback_token)[static_cast<unsigned char>(byte)]);
      }
      after_unknown = false;
    } else if (characters_.unknown_token && !(after_unknown && characters_.fuse_unknown)) {
      symbols.push_back(*characters_.unknown_token);
      after_unknown = true;
    }
  }
}

}  // namespace attnscope::tokenizer
