// Utf8Stream: prints streamed tokens without ever printing half a UTF-8 character.
#pragma once

#include <string>

namespace attnscope::cli {

// Holds back the bytes of an incomplete UTF-8 character until the rest arrives.
class Utf8Stream {
 public:
  // Appends `bytes`; returns what can be printed now.
  std::string push(const std::string& bytes);
  // Whatever is left (an incomplete sequence at the very end).
  std::string flush();

 private:
  std::string pending_;
};

}  // namespace attnscope::cli
