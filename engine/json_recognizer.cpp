// The byte-at-a-time JSON object recognizer (json_recognizer.h).
#include "engine/json_recognizer.h"

#include <functional>

namespace attnscope::engine {
namespace {

constexpr std::string_view kLiterals[] = {"true", "false", "null"};
constexpr std::string_view kEscapes = "\"\\/bfnrt";

bool is_whitespace(unsigned char byte) {
  return byte == ' ' || byte == '\t' || byte == '\n' || byte == '\r';
}

bool is_digit(unsigned char byte) { return byte >= '0' && byte <= '9'; }

int hex_value(unsigned char byte) {
  if (is_digit(byte)) return byte - '0';
  if (byte >= 'a' && byte <= 'f') return byte - 'a' + 10;
  if (byte >= 'A' && byte <= 'F') return byte - 'A' + 10;
  return -1;
}

// A well-formed UTF-8 sequence's lead byte: how many bytes follow it, and the range of the first
// of them (Unicode's table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF).
struct Utf8Lead {
  std::uint8_t following = 0;  // 0: not a lead byte
  std::uint8_t low = 0x80;
  std::uint8_t high = 0xBF;
};

Utf8Lead utf8_lead(unsigned char byte) {
  if (byte >= 0xC2 && byte <= 0xDF) return {1, 0x80, 0xBF};
  if (byte == 0xE0) return {2, 0xA0, 0xBF};
  if (byte == 0xED) return {2, 0x80, 0x9F};
  if (byte >= 0xE1 && byte <= 0xEF) return {2, 0x80, 0xBF};
  if (byte == 0xF0) return {3, 0x90, 0xBF};
  if (byte >= 0xF1 && byte <= 0xF3) return {3, 0x80, 0xBF};
  if (byte == 0xF4) return {3, 0x80, 0x8F};
  return {};
}

}  // namespace

std::size_t JsonRecognizer::hash() const {
  // Every field packed into two words, then mixed (equal states hash equal; any fixed mix does).
  const std::uint64_t position = static_cast<std::uint64_t>(mode_) | std::uint64_t{depth_} << 8 |
                                 std::uint64_t{static_cast<std::uint8_t>(gap_)} << 16 |
                                 std::uint64_t{in_key_} << 24 | std::uint64_t{utf8_left_} << 32 |
                                 std::uint64_t{utf8_low_} << 40 | std::uint64_t{utf8_high_} << 48 |
                                 std::uint64_t{hex_digits_} << 56;
  const std::uint64_t rest = std::uint64_t{low_surrogate_} | std::uint64_t{literal_} << 1 |
                             std::uint64_t{literal_read_} << 3 | std::uint64_t{code_unit_} << 8 |
                             std::uint64_t{open_objects_} << 24 | std::uint64_t{indent_} << 56;
  return std::hash<std::uint64_t>{}(position * 0x9E3779B97F4A7C15ull ^ rest);
}

bool JsonRecognizer::accept(unsigned char byte) {
  JsonRecognizer next = *this;
  if (!next.step(byte)) return false;
  *this = next;
  return true;
}

bool JsonRecognizer::accept(std::string_view bytes) {
  JsonRecognizer next = *this;
  for (const char byte : bytes) {
    if (!next.step(static_cast<unsigned char>(byte))) return false;
  }
  *this = next;
  return true;
}

bool JsonRecognizer::step(unsigned char byte) {
  switch (mode_) {
    case Mode::string:
    case Mode::string_utf8:
    case Mode::escape:
    case Mode::hex:
    case Mode::low_backslash:
    case Mode::low_u:
      return step_string(byte);
    case Mode::number_minus:
    case Mode::number_zero:
    case Mode::number_integer:
    case Mode::number_dot:
    case Mode::number_fraction:
    case Mode::number_e:
    case Mode::number_e_sign:
    case Mode::number_exponent:
      return step_number(byte);
    case Mode::literal: {
      const std::string_view word = kLiterals[literal_];
      if (byte != static_cast<unsigned char>(word[literal_read_])) return false;
      if (++literal_read_ == word.size()) {
        literal_ = 0;
        literal_read_ = 0;
        end_value();
      }
      return true;
    }
    case Mode::done:
      return false;
    default:
      return step_structure(byte);
  }
}

bool JsonRecognizer::step_structure(unsigned char byte) {
  if (is_whitespace(byte)) return extend_gap(byte);
  if (gap_ == Gap::carriage_return) return false;  // "\r" only before "\n"
  gap_ = Gap::none;
  indent_ = 0;
  switch (mode_) {
    case Mode::start:
      return byte == '{' && open(true);
    case Mode::value:
      return begin_value(byte);
    case Mode::value_or_close:
      return byte == ']' ? close(false) : begin_value(byte);
    case Mode::key_or_close:
      if (byte == '}') return close(true);
      [[fallthrough]];
    case Mode::key:
      if (byte != '"') return false;
      mode_ = Mode::string;
      in_key_ = true;
      return true;
    case Mode::colon:
      if (byte != ':') return false;
      mode_ = Mode::value;
      return true;
    case Mode::comma_or_close:
      if (byte == ',') {
        mode_ = innermost_is_object() ? Mode::key : Mode::value;
        return true;
      }
      return (byte == '}' || byte == ']') && close(byte == '}');
    default:
      return false;
  }
}

bool JsonRecognizer::begin_value(unsigned char byte) {
  switch (byte) {
    case '{':
      return open(true);
    case '[':
      return open(false);
    case '"':
      mode_ = Mode::string;
      in_key_ = false;
      return true;
    case '-':
      mode_ = Mode::number_minus;
      return true;
    case '0':
      mode_ = Mode::number_zero;
      return true;
    case 't':
    case 'f':
    case 'n':
      mode_ = Mode::literal;
      literal_ = byte == 't' ? 0 : byte == 'f' ? 1 : 2;
      literal_read_ = 1;
      return true;
    default:
      if (!is_digit(byte)) return false;
      mode_ = Mode::number_integer;
      return true;
  }
}

bool JsonRecognizer::step_string(unsigned char byte) {
  switch (mode_) {
    case Mode::string: {
      if (byte == '"') {
        if (in_key_) {
          mode_ = Mode::colon;
          in_key_ = false;
        } else {
          end_value();
        }
        return true;
      }
      if (byte == '\\') {
        mode_ = Mode::escape;
        return true;
      }
      if (byte < 0x20) return false;  // control characters must be escaped
      if (byte < 0x80) return true;
      const Utf8Lead lead = utf8_lead(byte);
      if (lead.following == 0) return false;
      mode_ = Mode::string_utf8;
      utf8_left_ = lead.following;
      utf8_low_ = lead.low;
      utf8_high_ = lead.high;
      return true;
    }
    case Mode::string_utf8:
      if (byte < utf8_low_ || byte > utf8_high_) return false;
      if (--utf8_left_ == 0) {
        mode_ = Mode::string;
        utf8_low_ = 0;
        utf8_high_ = 0;
      } else {
        utf8_low_ = 0x80;
        utf8_high_ = 0xBF;
      }
      return true;
    case Mode::escape:
      if (byte == 'u') {
        mode_ = Mode::hex;
        return true;
      }
      if (byte == 0 || kEscapes.find(static_cast<char>(byte)) == std::string_view::npos) {
        return false;
      }
      mode_ = Mode::string;
      return true;
    case Mode::low_backslash:
      if (byte != '\\') return false;
      mode_ = Mode::low_u;
      return true;
    case Mode::low_u:
      if (byte != 'u') return false;
      mode_ = Mode::hex;
      low_surrogate_ = true;
      return true;
    case Mode::hex: {
      const int digit = hex_value(byte);
      if (digit < 0) return false;
      code_unit_ = static_cast<std::uint16_t>(code_unit_ << 4 | digit);
      ++hex_digits_;
      // Refused as soon as the digits so far can only end as a surrogate out of place: a low
      // one (DC00-DFFF) without a high one before it, or anything else where a low one must be.
      if (hex_digits_ == 1 && low_surrogate_ && code_unit_ != 0xD) return false;
      if (hex_digits_ == 2 && (code_unit_ >= 0xDC && code_unit_ <= 0xDF) != low_surrogate_) {
        return false;
      }
      if (hex_digits_ == 4) {
        const bool high = code_unit_ >= 0xD800 && code_unit_ <= 0xDBFF;
        mode_ = high ? Mode::low_backslash : Mode::string;
        hex_digits_ = 0;
        code_unit_ = 0;
        low_surrogate_ = false;
      }
      return true;
    }
    default:
      return false;
  }
}

bool JsonRecognizer::step_number(unsigned char byte) {
  switch (mode_) {
    case Mode::number_minus:
      if (!is_digit(byte)) return false;
      mode_ = byte == '0' ? Mode::number_zero : Mode::number_integer;
      return true;
    case Mode::number_dot:
      if (!is_digit(byte)) return false;
      mode_ = Mode::number_fraction;
      return true;
    case Mode::number_e:
      if (byte == '+' || byte == '-') {
        mode_ = Mode::number_e_sign;
        return true;
      }
      [[fallthrough]];
    case Mode::number_e_sign:
      if (!is_digit(byte)) return false;
      mode_ = Mode::number_exponent;
      return true;
    case Mode::number_zero:  // no digit may follow a leading 0
    case Mode::number_integer:
      if (is_digit(byte) && mode_ == Mode::number_integer) return true;
      if (byte == '.') {
        mode_ = Mode::number_dot;
        return true;
      }
      if (byte == 'e' || byte == 'E') {
        mode_ = Mode::number_e;
        return true;
      }
      break;
    case Mode::number_fraction:
      if (is_digit(byte)) return true;
      if (byte == 'e' || byte == 'E') {
        mode_ = Mode::number_e;
        return true;
      }
      break;
    case Mode::number_exponent:
      if (is_digit(byte)) return true;
      break;
    default:
      return false;
  }
  // The number ended before this byte. A number is never the top-level value, so a ',', a
  // closing bracket or whitespace must follow.
  end_value();
  return step_structure(byte);
}

bool JsonRecognizer::extend_gap(unsigned char byte) {
  switch (gap_) {
    case Gap::none:
      gap_ = byte == ' '    ? Gap::space
             : byte == '\n' ? Gap::line_break
             : byte == '\r' ? Gap::carriage_return
                            : Gap::none;
      return gap_ != Gap::none;  // a tab only indents
    case Gap::carriage_return:
      if (byte != '\n') return false;
      gap_ = Gap::line_break;
      return true;
    case Gap::line_break:
      if ((byte != ' ' && byte != '\t') || indent_ >= kMaxIndent) return false;
      ++indent_;
      return true;
    default:
      return false;  // nothing follows a space
  }
}

bool JsonRecognizer::open(bool object) {
  if (depth_ >= kMaxDepth) return false;
  const std::uint32_t bit = std::uint32_t{1} << depth_;
  open_objects_ = object ? (open_objects_ | bit) : (open_objects_ & ~bit);
  ++depth_;
  mode_ = object ? Mode::key_or_close : Mode::value_or_close;
  return true;
}

bool JsonRecognizer::close(bool object) {
  if (depth_ == 0 || innermost_is_object() != object) return false;
  --depth_;
  open_objects_ &= ~(std::uint32_t{1} << depth_);
  end_value();
  return true;
}

void JsonRecognizer::end_value() { mode_ = depth_ == 0 ? Mode::done : Mode::comma_or_close; }

}  // namespace attnscope::engine
