// Where a tensor's bytes live.
#pragma once

#include <string_view>

namespace attnscope {

enum class Device { CPU, CUDA };

// Whether this build has the CUDA path (CMake's ATTNSCOPE_HAS_CUDA). Code calls into the CUDA
// side only under `if constexpr (kCudaBuild)`, so builds without it never reference those symbols.
constexpr bool kCudaBuild = ATTNSCOPE_HAS_CUDA != 0;

constexpr std::string_view device_name(Device d) { return d == Device::CPU ? "cpu" : "cuda"; }

}  // namespace attnscope
