// Strict JSON parsing for untrusted files (runtime/strict_json.h).
//
// Two linear passes over the text: a SAX pass (nlohmann's event parser, no tree built) that
// refuses a duplicate key and a nesting deeper than kMaxJsonDepth, then the ordinary parse into a
// tree. Both are needed: nlohmann's parse with a callback (the obvious way to see keys while the
// tree is built) walks the parent object each time a child object ends, which is quadratic in
// the number of entries (a 40k-tensor safetensors header took 22 s); and a tree nested hundreds
// of thousands deep overflows the stack of any recursive copy, dump or destructor later.
//
// Cost: two parser passes plus one hash-set insertion per object key.
#include "runtime/strict_json.h"

#include <cstdio>
#include <unordered_set>
#include <vector>

#include "runtime/error.h"

namespace attnscope {
namespace {

using json = nlohmann::json;

// The SAX pass: keeps the keys of every open object and the depth, throws Error on the first
// duplicate key or a container opened beyond kMaxJsonDepth; a syntax error is left to the
// second pass, which reports it with the parser's own message.
class StrictnessChecker final : public json::json_sax_t {
 public:
  StrictnessChecker(const std::string& label, const std::string& what)
      : label_(label), what_(what) {}

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(json::number_integer_t) override { return true; }
  bool number_unsigned(json::number_unsigned_t) override { return true; }
  bool number_float(json::number_float_t, const json::string_t&) override { return true; }
  bool string(json::string_t&) override { return true; }
  bool binary(json::binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open_container();
    keys_of_open_objects_.emplace_back();
    return true;
  }
  bool key(json::string_t& key) override {
    check(keys_of_open_objects_.back().insert(key).second, label_, [&] {
      return (what_.empty() ? "" : what_ + ": ") + "duplicate key " + single_quoted(key);
    });
    return true;
  }
  bool end_object() override {
    keys_of_open_objects_.pop_back();
    --depth_;
    return true;
  }
  bool start_array(std::size_t) override {
    open_container();
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  void open_container() {
    ++depth_;
    check(depth_ <= kMaxJsonDepth, label_, [&] {
      return (what_.empty() ? "" : what_ + " ") + "nests objects and arrays deeper than " +
             std::to_string(kMaxJsonDepth) + " levels";
    });
  }

  const std::string& label_;
  const std::string& what_;
  int depth_ = 0;
  std::vector<std::unordered_set<std::string>> keys_of_open_objects_;
};

}  // namespace

std::string json_parser_message(const json::exception& error) {
  const std::string_view what = error.what();
  const std::size_t prefix_end = what.find("] ");
  return std::string(prefix_end == std::string_view::npos ? what : what.substr(prefix_end + 2));
}

std::string json_excerpt(const json& value) {
  constexpr std::size_t kMaxBytes = 60;
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() <= kMaxBytes) return text;
  std::size_t cut = kMaxBytes;  // backed up to the start of a UTF-8 character
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

std::string single_quoted(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "'";
}

json parse_json_refusing_duplicates(std::string_view text, const std::string& label,
                                    const std::string& what) {
  const std::string invalid = what.empty() ? "not valid JSON" : what + " is not valid JSON";
  const std::size_t nul = text.find('\0');
  check(nul == std::string_view::npos, label, [&] {
    return invalid + ": NUL byte at " + (what.empty() ? "" : what + " ") + "offset " +
           std::to_string(nul);
  });
  try {
    StrictnessChecker checker(label, what);
    json::sax_parse(text.begin(), text.end(), &checker);
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& error) {  // a parse_error, or out_of_range for 1e999
    throw Error(label, invalid + ": " + json_parser_message(error));
  }
}

}  // namespace attnscope
