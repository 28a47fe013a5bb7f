// The occupancy formula of occupancy.h, one bound at a time.
#include "profiler/occupancy.h"

#include <algorithm>
#include <climits>

namespace attnscope::profiler {

namespace {

std::size_t round_up(std::size_t value, std::size_t unit) {
  return (value + unit - 1) / unit * unit;
}

}  // namespace

Occupancy estimate_occupancy(const SmLimits& sm, const LaunchShape& launch) {
  Occupancy result;
  result.max_warps_per_sm = sm.max_threads_per_sm / sm.warp_size;
  const int warps_per_block = (launch.threads_per_block + sm.warp_size - 1) / sm.warp_size;
  if (launch.threads_per_block <= 0 || launch.threads_per_block > sm.max_threads_per_block) {
    result.limit = "does not fit";
    return result;
  }

  const int by_warps = result.max_warps_per_sm / warps_per_block;

  int by_registers = INT_MAX;
  if (launch.registers_per_thread > 0) {
    const int registers_per_warp = static_cast<int>(
        round_up(static_cast<std::size_t>(launch.registers_per_thread * sm.warp_size),
                 static_cast<std::size_t>(sm.register_allocation_unit)));
    const int warps_per_sub_partition =
        sm.registers_per_sm / sm.sub_partitions / registers_per_warp;
    by_registers = registers_per_warp * warps_per_block > sm.registers_per_block
                       ? 0
                       : warps_per_sub_partition * sm.sub_partitions / warps_per_block;
  }

  const std::size_t shared_per_block =
      round_up(launch.shared_bytes_per_block + sm.reserved_shared_bytes_per_block,
               sm.shared_allocation_unit);
  const int by_shared = launch.shared_bytes_per_block > sm.shared_bytes_per_block_optin
                            ? 0
                            : static_cast<int>(std::min<std::size_t>(
                                  sm.shared_bytes_per_sm / shared_per_block, INT_MAX));

  // The smallest bound wins; on ties the first named here is reported.
  const std::pair<int, const char*> bounds[] = {{by_warps, "warps"},
                                                {by_registers, "registers"},
                                                {by_shared, "shared memory"},
                                                {sm.max_blocks_per_sm, "blocks"}};
  const auto* smallest =
      std::min_element(std::begin(bounds), std::end(bounds),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
  result.blocks_per_sm = smallest->first;
  result.limit = result.blocks_per_sm == 0 ? "does not fit" : smallest->second;
  result.warps_per_sm = result.blocks_per_sm * warps_per_block;
  result.fraction =
      static_cast<double>(result.warps_per_sm) / static_cast<double>(result.max_warps_per_sm);
  return result;
}

}  // namespace attnscope::profiler
