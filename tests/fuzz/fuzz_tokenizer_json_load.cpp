// libFuzzer harness for reading a tokenizer.json (models/tokenizer/tokenizer_json.h).
//
// Input: any bytes, written as a tokenizer.json and loaded. Checked: loading either succeeds, and
// then encoding and decoding a fixed text neither throws nor crashes, or throws attnscope::Error
// (one clear line); any other exception (a JSON library's type error, say), crash or sanitizer
// report is a bug. Cost: linear in the input size per run, plus one file write.
// Seeds: tests/fuzz/corpus/tokenizer_json_load/ (small byte-level and SentencePiece files, one with
// Unicode normalizers).

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "models/tokenizer/tokenizer_json.h"
#include "runtime/error.h"

namespace {

// One scratch file for the whole run (libFuzzer calls the harness from one thread).
const std::string& scratch_file() {
  static const std::string path = [] {
    std::string name = "/tmp/attnscope_fuzz_tokenizer_XXXXXX";
    const int fd = mkstemp(name.data());
    if (fd < 0) std::abort();
    close(fd);
    return name;
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FILE* file = std::fopen(scratch_file().c_str(), "wb");
  if (file == nullptr || std::fwrite(data, 1, size, file) != size || std::fclose(file) != 0) {
    std::abort();
  }
  try {
    const auto tokenizer = attnscope::tokenizer::TokenizerJson::load(scratch_file());
    const std::vector<std::int32_t> ids =
        tokenizer.encode("Hello  w\xc3\xb6rld \xf0\x9f\x99\x82<s>", true);
    tokenizer.decode(ids);
  } catch (const attnscope::Error&) {
    // Malformed or unsupported, refused as it should be.
  }
  return 0;
}
