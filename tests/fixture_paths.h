// Where tests find their fixtures.
//
// shared_fixtures(): OpenAI's GPT-2 tokenizer files, from ../shared/fixtures by default (the CMake
// cache variable ATTNSCOPE_FIXTURES_DIR), overridden by the environment variable of that name.
// They are absent on a user's machine: tests that need them call shared_fixtures_present() and
// skip with a message when it is false.
// test_fixtures(): files committed under tests/fixtures/.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace attnscope::testing {

inline std::string shared_fixtures() {
  const char* env = std::getenv("ATTNSCOPE_FIXTURES_DIR");
  return env && *env ? env : ATTNSCOPE_SHARED_FIXTURES;
}

inline std::string gpt2_tokenizer_dir() { return shared_fixtures() + "/gpt2-tokenizer"; }

// True when the shared GPT-2 tokenizer files are there; otherwise says loudly that the calling
// test is skipped (doctest prints the message) and returns false.
inline bool shared_fixtures_present() {
  if (std::filesystem::exists(gpt2_tokenizer_dir() + "/encoder.json")) return true;
  MESSAGE("SKIPPED: shared GPT-2 tokenizer fixtures not found at "
          << gpt2_tokenizer_dir() << " (set ATTNSCOPE_FIXTURES_DIR)");
  return false;
}

inline std::string test_fixtures() { return ATTNSCOPE_TEST_FIXTURES; }

}  // namespace attnscope::testing
