// Where a tensor's bytes live.
#pragma once

#include <string_view>

namespace attnscope {

enum class Device { CPU, CUDA };

constexpr std::string_view device_name(Device d) { return d == Device::CPU ? "cpu" : "cuda"; }

}  // namespace attnscope
