// libFuzzer harness for the config.json reader.
//
// Input: any bytes, parsed as config.json text with parse_model_config. Checked: parsing either
// succeeds with a config that validate_config accepts (naming a known activation), or throws
// attnscope::Error; any other exception, crash or sanitizer report is a bug. Cost: linear in the
// input size per run. Seeds: tests/fuzz/corpus/config/.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/config.h"
#include "runtime/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const attnscope::ModelConfig config = attnscope::parse_model_config(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz/config.json");
    attnscope::validate_config(config, "fuzz/config.json");
    // A validated config names a known activation (mlp_activation() relies on it).
    if (!attnscope::find_activation(config.activation)) __builtin_trap();
  } catch (const attnscope::Error&) {
    // Malformed input, refused as it should be.
  }
  return 0;
}
