// Python's view of a chat template's values (jinja_values.h).
#include "models/tokenizer/jinja_values.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include "models/tokenizer/utf8.h"
#include "runtime/error.h"

namespace attnscope::tokenizer::jinja {

namespace {

// `prefix` and the byte's two lowercase hex digits: Python's \x1b, JSON's \u001b.
void append_escaped_byte(const char* prefix, unsigned char c, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += prefix;
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

std::string string_repr(const std::string& s) {
  const char quote =
      s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\' || c == static_cast<unsigned char>(quote)) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      append_escaped_byte("\\x", c, out);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + quote;
}

// "\u00e9": a UTF-16 code unit as Python's json escapes it.
void append_json_escape(char32_t unit, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(unit >> shift) & 15];
}

void json_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (ensure_ascii && c >= 0x7f) {
      // Python's ensure_ascii: everything past '~' as \uXXXX, a surrogate pair past U+FFFF.
      const CodePoint cp = decode_utf8(s, i);
      const char32_t value = cp.length == 0 ? char32_t{0xFFFD} : cp.value;
      i += std::max<std::size_t>(cp.length, 1) - 1;
      if (value < 0x10000) {
        append_json_escape(value, out);
      } else {
        append_json_escape(0xD800 + ((value - 0x10000) >> 10), out);
        append_json_escape(0xDC00 + ((value - 0x10000) & 0x3FF), out);
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          append_escaped_byte("\\u00", c, out);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

void json_dump(const Value& v, const JsonStyle& style, int depth, std::string& out) {
  if (out.size() > style.max_bytes) throw Error("chat template: tojson's text passes its limit");
  const auto newline = [&](int level) {
    if (!style.indent) return;
    out += '\n';
    for (int i = 0; i < level && out.size() <= style.max_bytes; ++i) out += *style.indent;
  };
  const std::string& item_separator = style.separators ? style.separators->first
                                      : style.indent   ? ","
                                                       : ", ";
  const std::string& key_separator = style.separators ? style.separators->second : ": ";
  switch (v.type()) {
    case Value::value_t::discarded:
      throw Error("chat template: tojson of an undefined value");
    case Value::value_t::null:
      out += "null";
      return;
    case Value::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case Value::value_t::number_float: {
      const double x = v.get<double>();
      out += std::isnan(x)   ? "NaN"
             : std::isinf(x) ? (x > 0 ? "Infinity" : "-Infinity")
                             : python_float(x);
      return;
    }
    case Value::value_t::number_integer:
    case Value::value_t::number_unsigned:
      out += std::to_string(v.get<std::int64_t>());
      return;
    case Value::value_t::string:
      json_string(v.get<std::string>(), style.ensure_ascii, out);
      return;
    case Value::value_t::array: {
      if (v.empty()) {
        out += "[]";
        return;
      }
      out += "[";
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) out += item_separator;
        newline(depth + 1);
        json_dump(v[i], style, depth + 1, out);
      }
      newline(depth);
      out += "]";
      return;
    }
    default: {
      if (is_namespace(v)) throw Error("chat template: tojson of a namespace");
      if (v.empty()) {
        out += "{}";
        return;
      }
      std::vector<std::pair<std::string, const Value*>> items;
      for (const auto& [key, item] : v.items()) items.emplace_back(key, &item);
      if (style.sort_keys) {
        std::stable_sort(items.begin(), items.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
      }
      out += "{";
      for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += item_separator;
        newline(depth + 1);
        json_string(items[i].first, style.ensure_ascii, out);
        out += key_separator;
        json_dump(*items[i].second, style, depth + 1, out);
      }
      newline(depth);
      out += "}";
    }
  }
}

// The characters Python's str.strip() removes (Unicode whitespace).
bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

// The length of the line end that starts at s[i], or 0.
std::size_t line_end_at(const std::string& s, std::size_t i) {
  const auto next = [&](std::size_t k) { return i + k < s.size() ? s[i + k] : '\0'; };
  switch (s[i]) {
    case '\r':
      return next(1) == '\n' ? 2 : 1;
    case '\n':
    case '\v':
    case '\f':
    case '\x1c':
    case '\x1d':
    case '\x1e':
      return 1;
    case '\xc2':  // U+0085
      return next(1) == '\x85' ? 2 : 0;
    case '\xe2':  // U+2028, U+2029
      return next(1) == '\x80' && (next(2) == '\xa8' || next(2) == '\xa9') ? 3 : 0;
    default:
      return 0;
  }
}

}  // namespace

bool is_namespace(const Value& v) {
  return v.is_object() && v.size() == 1 && v.contains(kNamespaceKey);
}

std::string type_name(const Value& v) {
  if (v.is_discarded()) return "undefined";
  if (v.is_null()) return "none";
  if (v.is_boolean()) return "bool";
  if (v.is_number_integer()) return "int";
  if (v.is_number_float()) return "float";
  if (v.is_string()) return "str";
  if (v.is_array()) return "list";
  return is_namespace(v) ? "namespace" : "dict";
}

bool truthy(const Value& v) {
  switch (v.type()) {
    case Value::value_t::null:
    case Value::value_t::discarded:
      return false;
    case Value::value_t::boolean:
      return v.get<bool>();
    case Value::value_t::number_integer:
    case Value::value_t::number_unsigned:
      return v.get<std::int64_t>() != 0;
    case Value::value_t::number_float:
      return v.get<double>() != 0.0;
    case Value::value_t::string:
      return !v.get_ref<const std::string&>().empty();
    default:
      return !v.empty();
  }
}

bool is_int(const Value& v) { return v.is_number_integer(); }
bool is_number(const Value& v) { return v.is_number() || v.is_boolean(); }
double as_double(const Value& v) {
  return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>();
}
std::int64_t as_int(const Value& v) {
  return v.is_boolean() ? (v.get<bool>() ? 1 : 0) : v.get<std::int64_t>();
}

// Python's repr of a float: the shortest digits that read back, positional from 1e-4 to 1e16.
std::string python_float(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  std::array<char, 64> buffer{};
  const auto [end, ec] =
      std::to_chars(buffer.data(), buffer.data() + buffer.size(), x, std::chars_format::scientific);
  const std::string text(buffer.data(), end);
  const std::size_t e = text.find('e');
  std::string mantissa = text.substr(0, e);
  const int exponent = std::stoi(text.substr(e + 1));
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exponent < 0 ? "e-" : "e+";
    const std::string magnitude = std::to_string(std::abs(exponent));
    out += (magnitude.size() < 2 ? "0" : "") + magnitude;
  } else if (exponent < 0) {
    out += "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  } else {
    const auto point = static_cast<std::size_t>(exponent) + 1;
    if (digits.size() <= point) {
      out += digits + std::string(point - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, point) + "." + digits.substr(point);
    }
  }
  return out;
}

// Python's str(): what {{ }} prints.
std::string python_str(const Value& v) {
  switch (v.type()) {
    case Value::value_t::discarded:
      return "";
    case Value::value_t::string:
      return v.get<std::string>();
    default:
      return python_repr(v);
  }
}

std::string python_repr(const Value& v) {
  switch (v.type()) {
    case Value::value_t::discarded:
      return "Undefined";
    case Value::value_t::null:
      return "None";
    case Value::value_t::boolean:
      return v.get<bool>() ? "True" : "False";
    case Value::value_t::number_integer:
    case Value::value_t::number_unsigned:
      return std::to_string(v.get<std::int64_t>());
    case Value::value_t::number_float:
      return python_float(v.get<double>());
    case Value::value_t::string:
      return string_repr(v.get<std::string>());
    case Value::value_t::array: {
      std::string out = "[";
      for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + python_repr(v[i]);
      return out + "]";
    }
    default: {
      if (is_namespace(v)) return "<Namespace " + python_repr(v[std::string(kNamespaceKey)]) + ">";
      std::string out = "{";
      bool first = true;
      for (const auto& [key, item] : v.items()) {
        out += (first ? "" : ", ") + string_repr(key) + ": " + python_repr(item);
        first = false;
      }
      return out + "}";
    }
  }
}

// A string's code points, as the byte offsets where each starts (plus the end).
std::vector<std::size_t> code_point_starts(const std::string& s) {
  std::vector<std::size_t> starts;
  std::size_t pos = 0;
  while (pos < s.size()) {
    starts.push_back(pos);
    const CodePoint cp = decode_utf8(s, pos);
    pos += cp.length == 0 ? 1 : cp.length;
  }
  starts.push_back(s.size());
  return starts;
}

// str.strip / lstrip / rstrip, of whitespace or of the code points in `chars`.
std::string strip(const std::string& s, bool left, bool right,
                  const std::optional<std::string>& chars) {
  const std::vector<std::size_t> starts = code_point_starts(s);
  const auto removable = [&](std::size_t i) {
    const std::string piece = s.substr(starts[i], starts[i + 1] - starts[i]);
    if (chars) return chars->find(piece) != std::string::npos;
    return is_python_space(decode_utf8(piece, 0).value);
  };
  std::size_t first = 0, last = starts.size() - 1;
  if (left) {
    while (first < last && removable(first)) ++first;
  }
  if (right) {
    while (last > first && removable(last - 1)) --last;
  }
  return s.substr(starts[first], starts[last] - starts[first]);
}

std::string ascii_case(std::string s, Case mode) {
  bool word_start = true;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    const bool letter = std::isalpha(c) != 0;
    bool upper = mode == Case::upper;
    if (mode == Case::capitalize) upper = i == 0;
    if (mode == Case::title) upper = word_start;
    s[i] = static_cast<char>(upper ? std::toupper(c) : std::tolower(c));
    word_start = !letter;
  }
  return s;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to,
                        std::int64_t count) {
  std::string out;
  std::size_t pos = 0;
  std::int64_t done = 0;
  if (from.empty()) {  // Python inserts `to` around every code point
    const std::vector<std::size_t> starts = code_point_starts(s);
    for (std::size_t i = 0; i + 1 < starts.size(); ++i) {
      if (count < 0 || done++ < count) out += to;
      out += s.substr(starts[i], starts[i + 1] - starts[i]);
    }
    if (count < 0 || done < count) out += to;
    return out;
  }
  while (count < 0 || done < count) {
    const std::size_t found = s.find(from, pos);
    if (found == std::string::npos) break;
    out += s.substr(pos, found - pos) + to;
    pos = found + from.size();
    ++done;
  }
  return out + s.substr(pos);
}

Value split(const std::string& s, const Value& separator, std::int64_t max_splits) {
  Value parts = Value::array();
  if (separator.is_null() || separator.is_discarded()) {  // runs of whitespace, none at the ends
    std::size_t pos = 0;
    while (pos < s.size()) {
      while (pos < s.size() && is_python_space(static_cast<unsigned char>(s[pos]))) ++pos;
      if (pos == s.size()) break;
      if (max_splits >= 0 && static_cast<std::int64_t>(parts.size()) == max_splits) {
        parts.push_back(strip(s.substr(pos), false, true, std::nullopt));
        break;
      }
      const std::size_t start = pos;
      while (pos < s.size() && !is_python_space(static_cast<unsigned char>(s[pos]))) ++pos;
      parts.push_back(s.substr(start, pos - start));
    }
    return parts;
  }
  const std::string& sep = separator.get_ref<const std::string&>();
  if (sep.empty()) throw Error("chat template: split() with an empty separator");
  std::size_t pos = 0;
  while (max_splits < 0 || static_cast<std::int64_t>(parts.size()) < max_splits) {
    const std::size_t found = s.find(sep, pos);
    if (found == std::string::npos) break;
    parts.push_back(s.substr(pos, found - pos));
    pos = found + sep.size();
  }
  parts.push_back(s.substr(pos));
  return parts;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t end = line_end_at(s, i);
    if (end == 0) {
      ++i;
      continue;
    }
    lines.push_back(s.substr(start, i - start));
    i += end;
    start = i;
  }
  if (start < s.size()) lines.push_back(s.substr(start));
  return lines;
}

// Python's floor division and modulo (the quotient rounds toward minus infinity).
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::string python_json(const Value& value, const JsonStyle& style) {
  std::string out;
  json_dump(value, style, 0, out);
  if (out.size() > style.max_bytes) throw Error("chat template: tojson's text passes its limit");
  return out;
}

}  // namespace attnscope::tokenizer::jinja
