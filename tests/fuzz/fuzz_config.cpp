// libFuzzer harness for the config.json reader.
//
// Input: any bytes, parsed as config.json text with gpt2::parse_gpt2_config. Checked: parsing
// either succeeds with a config that gpt2::validate_gpt2_config accepts (naming a known
// activation), or throws attnscope::Error; any other exception, crash or sanitizer report is a bug.
// Cost: linear in the input size per run. Seeds: tests/fuzz/corpus/config/.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "models/gpt2/config.h"
#include "runtime/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const attnscope::gpt2::Gpt2Config config = attnscope::gpt2::parse_gpt2_config(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz/config.json");
    attnscope::gpt2::validate_gpt2_config(config, "fuzz/config.json");
    // A validated config names a known activation (mlp_activation() relies on it).
    if (!attnscope::find_activation(config.activation)) __builtin_trap();
  } catch (const attnscope::Error&) {
    // Malformed input, refused as it should be.
  }
  return 0;
}
