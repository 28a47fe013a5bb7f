// Reading and strict JSON parsing of untrusted files (runtime/strict_json.h).
//
// Cost: one read of the file; one pass of nlohmann's parser plus one set insertion per object key.
#include "runtime/strict_json.h"

#include <cstdio>
#include <fstream>
#include <set>
#include <vector>

#include "runtime/error.h"

namespace attnscope {

using json = nlohmann::json;

std::string read_file(const std::filesystem::path& path, std::uintmax_t max_bytes) {
  const std::string label = path.string();
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  check(status.type() != std::filesystem::file_type::not_found, label, "no such file");
  check(!error, label, error.message());
  check(std::filesystem::is_regular_file(status), label, "not a regular file");
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  check(!error, label, "cannot read the file size: " + error.message());
  check(size <= max_bytes, label, [&] {
    return "file is " + std::to_string(size) + " bytes; a " + path.filename().string() +
           " is far smaller than " + std::to_string(max_bytes >> 20) + " MiB";
  });

  std::ifstream file(path, std::ios::binary);
  check(file.is_open(), label, "cannot open the file");
  std::string text(size, '\0');
  file.read(text.data(), static_cast<std::streamsize>(size));
  check(static_cast<std::uintmax_t>(file.gcount()) == size, label, "cannot read the file");
  return text;
}

std::string json_parser_message(const json::exception& error) {
  const std::string_view what = error.what();
  const std::size_t prefix_end = what.find("] ");
  return std::string(prefix_end == std::string_view::npos ? what : what.substr(prefix_end + 2));
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
  std::vector<std::set<std::string>> keys_of_open_objects;
  const json::parser_callback_t reject_duplicate_keys = [&](int, json::parse_event_t event,
                                                            json& parsed) {
    if (event == json::parse_event_t::object_start) {
      keys_of_open_objects.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      keys_of_open_objects.pop_back();
    } else if (event == json::parse_event_t::key) {
      const std::string& key = parsed.get_ref<const std::string&>();
      check(keys_of_open_objects.back().insert(key).second, label,
            what + ": duplicate key " + single_quoted(key));
    }
    return true;
  };
  const std::size_t nul = text.find('\0');
  check(nul == std::string_view::npos, label,
        what + " is not valid JSON: NUL byte at " + what + " offset " + std::to_string(nul));
  try {
    return json::parse(text.begin(), text.end(), reject_duplicate_keys);
  } catch (const json::exception& error) {  // a parse_error, or out_of_range for 1e999
    throw Error(label, what + " is not valid JSON: " + json_parser_message(error));
  }
}

}  // namespace attnscope
