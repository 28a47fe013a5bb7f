// JsonObjectText: a JSON object as key -> raw JSON value, for the config suites
// (tests/test_config.cpp, tests/test_llama_config.cpp) to build variants of a small valid config
// with one key set to any text (also invalid JSON) or erased.
#pragma once

#include <map>
#include <string>
#include <utility>

namespace attnscope::testing {

class JsonObjectText {
 public:
  explicit JsonObjectText(std::map<std::string, std::string> fields) : fields_(std::move(fields)) {}

  JsonObjectText& set(const std::string& key, const std::string& raw_json_value) {
    fields_[key] = raw_json_value;
    return *this;
  }
  JsonObjectText& erase(const std::string& key) {
    fields_.erase(key);
    return *this;
  }
  std::string json() const {
    std::string text = "{";
    for (const auto& [key, value] : fields_) {
      if (text.size() > 1) text += ", ";
      text += "\"" + key + "\": " + value;
    }
    return text + "}";
  }

 private:
  std::map<std::string, std::string> fields_;
};

}  // namespace attnscope::testing
