// JsonRecognizer: reads a text one byte at a time and refuses every byte after which the text
// could no longer become a JSON object (RFC 8259), so that a sampler masked by it (JSON mode,
// engine/json_token_mask.h) can only write JSON.
//
// It is a pushdown automaton: a stack of the open containers (object or array, one bit each) and
// where in the grammar the next byte falls:
//   start          before the top-level object: '{' (after a gap, below)
//   value          after ':' or an array's ',': '{' '[' '"' '-' digit 't' 'f' 'n'
//   value_or_close after '[': a value or ']'
//   key_or_close   after '{': '"' or '}'
//   key            after an object's ',': '"'
//   colon          after a key: ':'
//   comma_or_close after a value: ',' or the bracket closing the innermost container
//   string         '"' ends it, '\' escapes, bytes >= 0x20 (well-formed UTF-8) are text
//   escape, hex    \" \\ \/ \b \f \n \r \t and \uXXXX; a high surrogate must be followed by a
//                  \u low surrogate, and a low one never stands alone
//   number         -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, ended by the byte after it
//   literal        true, false, null
//   done           the object is closed: nothing more
// Every text it accepts can be completed (a string can always close, a container too), so a
// masked sampler never runs out of tokens mid-way. It takes a part of JSON only, so that a model
// cannot fill its budget with emptiness: the whitespace between two tokens (a gap) is nothing, one
// space, or one line break ("\n" or "\r\n") and at most kMaxIndent spaces or tabs, as compact
// and pretty-printed JSON write it (llama.cpp's JSON grammar has the same rule); and at most
// kMaxDepth containers are open at once.
// Cost: O(1) per byte; the state is 20 bytes, copied freely (the token mask copies it per
// vocabulary trie node it visits), compared and hashed (the mask remembers what it found).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace attnscope::engine {

class JsonRecognizer {
 public:
  static constexpr int kMaxDepth = 32;
  static constexpr int kMaxIndent = 20;

  // Reads `byte`; false (the state unchanged) when no JSON object of the form above starts with
  // the text so far followed by it.
  bool accept(unsigned char byte);
  // Reads `bytes` in turn; false (the state unchanged) when one of them is refused.
  bool accept(std::string_view bytes);
  // Whether the text read is one whole JSON object (and so can take no more bytes).
  bool complete() const { return mode_ == Mode::done; }

  // Equal when the texts read so far stand at the same place in the grammar, whatever the keys
  // and strings in them: a field the mode does not use is kept 0, so equal places compare equal
  // (JsonTokenMask remembers its masks by state).
  bool operator==(const JsonRecognizer&) const = default;
  std::size_t hash() const;

 private:
  enum class Mode : std::uint8_t {
    start,
    value,
    value_or_close,
    key_or_close,
    key,
    colon,
    comma_or_close,
    string,
    string_utf8,     // in a UTF-8 sequence: utf8_left_ more bytes, the next in [utf8_low_,
                     // utf8_high_]
    escape,          // after '\'
    hex,             // in \uXXXX: hex_digits_ read so far, code_unit_ their value
    low_backslash,   // after a high surrogate: '\' must follow
    low_u,           // then 'u'
    number_minus,    // '-': a digit must follow
    number_zero,     // a leading 0
    number_integer,  // [1-9][0-9]*
    number_dot,      // '.': a digit must follow
    number_fraction,
    number_e,       // 'e' or 'E': a sign or digit must follow
    number_e_sign,  // the exponent's sign: a digit must follow
    number_exponent,
    literal,  // in true/false/null: literal_ names which, literal_read_ bytes read
    done,
  };

  // The byte against this state; false when refused (the state may then be half-changed:
  // accept() works on a copy).
  bool step(unsigned char byte);
  bool step_structure(unsigned char byte);
  bool step_string(unsigned char byte);
  bool step_number(unsigned char byte);
  bool begin_value(unsigned char byte);
  // After a value: done at the top level, else a ',' or a closing bracket.
  void end_value();
  bool extend_gap(unsigned char byte);
  bool open(bool object);
  bool close(bool object);
  bool innermost_is_object() const { return ((open_objects_ >> (depth_ - 1)) & 1u) != 0; }

  Mode mode_ = Mode::start;
  std::uint8_t depth_ = 0;  // open containers
  enum class Gap : std::uint8_t { none, space, carriage_return, line_break };
  Gap gap_ = Gap::none;             // the whitespace since the last other byte
  std::uint8_t indent_ = 0;         // after a line break: the spaces and tabs since
  bool in_key_ = false;             // the string being read is an object's key
  std::uint8_t utf8_left_ = 0;      // string_utf8
  std::uint8_t utf8_low_ = 0;       // string_utf8: the next byte's least value
  std::uint8_t utf8_high_ = 0;      // and its greatest
  std::uint8_t hex_digits_ = 0;     // hex
  bool low_surrogate_ = false;      // hex: this \u must be a low surrogate
  std::uint8_t literal_ = 0;        // literal: 0 true, 1 false, 2 null
  std::uint8_t literal_read_ = 0;   // literal
  std::uint16_t code_unit_ = 0;     // hex
  std::uint32_t open_objects_ = 0;  // bit d: the container at depth d is an object
};

}  // namespace attnscope::engine
