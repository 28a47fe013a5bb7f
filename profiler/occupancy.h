// Theoretical occupancy of a kernel launch: how many of an SM's warp slots its blocks can fill
// at once, given what each block takes. The same computation as the CUDA Occupancy Calculator and
// the toolkit's cuda_occupancy.h (default shared-memory carveout, no cluster launch).
//
// For a launch of T threads per block, R registers per thread and S bytes of shared memory per
// block (static + dynamic) on an SM with the limits below:
//
//   warps per block     W = ceil(T / warp_size)
//   by warp slots       B_warps = floor(max_threads_per_sm / warp_size / W)
//   by registers        registers go to warps in units of 256, and each of the SM's 4
//                       sub-partitions (schedulers) has a quarter of the register file:
//                         regs per warp  Rw = roundup(R * warp_size, 256)
//                         warps per sub-partition = floor(registers_per_sm / 4 / Rw)
//                         B_regs = floor(4 * warps per sub-partition / W)
//                       (0 when one block does not fit: W * Rw > registers_per_block)
//   by shared memory    every block also holds reserved_shared_bytes_per_block (1 KiB) for the
//                       driver, and allocations round up to 128 bytes (256 before sm_80):
//                         Sb = roundup(S + reserved, unit)
//                         B_smem = floor(shared_bytes_per_sm / Sb)
//                       (0 when S > shared_bytes_per_block_optin)
//   by the block limit  B_max = max_blocks_per_sm
//
//   blocks per SM  B = min(B_warps, B_regs, B_smem, B_max)
//   occupancy      = B * W / (max_threads_per_sm / warp_size)          in [0, 1]
//
// This is an upper bound for what the SM can hold, not what it achieved: a grid with fewer
// blocks than SMs x B, tail effects and stalls all lower the achieved occupancy, which only a
// hardware counter (Nsight Compute) measures. Cost: a few integer operations.
#pragma once

#include <cstddef>
#include <string>

namespace attnscope::profiler {

// Per-SM limits of a GPU. Defaults: an H100/H200 (sm_90).
struct SmLimits {
  int warp_size = 32;
  int max_threads_per_sm = 2048;
  int max_threads_per_block = 1024;
  int max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  int registers_per_block = 65536;
  int register_allocation_unit = 256;  // registers per warp are rounded up to this
  int sub_partitions = 4;              // the register file is split among 4 schedulers
  std::size_t shared_bytes_per_sm = 228 * 1024;
  std::size_t shared_bytes_per_block_optin = 227 * 1024;  // the most one block may ask for
  std::size_t reserved_shared_bytes_per_block = 1024;     // the driver's share of every block
  std::size_t shared_allocation_unit = 128;
};

// The limits of the GPU described by `prop`, a cudaDeviceProp (a template, as in the toolkit's
// cuda_occupancy.h, so that this header needs no CUDA headers: any struct with these fields works).
template <typename DeviceProp>
SmLimits sm_limits_of(const DeviceProp& prop) {
  SmLimits limits;
  limits.warp_size = prop.warpSize;
  limits.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  limits.max_threads_per_block = prop.maxThreadsPerBlock;
  limits.max_blocks_per_sm = prop.maxBlocksPerMultiProcessor;
  limits.registers_per_sm = prop.regsPerMultiprocessor;
  limits.registers_per_block = prop.regsPerBlock;
  limits.shared_bytes_per_sm = prop.sharedMemPerMultiprocessor;
  limits.shared_bytes_per_block_optin = prop.sharedMemPerBlockOptin;
  limits.reserved_shared_bytes_per_block = prop.reservedSharedMemPerBlock;
  limits.shared_allocation_unit = prop.major >= 8 ? 128 : 256;
  return limits;
}

// What one block of a launch takes.
struct LaunchShape {
  int threads_per_block = 0;
  int registers_per_thread = 0;
  std::size_t shared_bytes_per_block = 0;  // static + dynamic
};

struct Occupancy {
  int blocks_per_sm = 0;
  int warps_per_sm = 0;      // active warps: blocks_per_sm x warps per block
  int max_warps_per_sm = 0;  // the SM's warp slots
  double fraction = 0;       // warps_per_sm / max_warps_per_sm
  std::string limit;         // the smallest bound: "warps", "registers", "shared memory", "blocks"
                             // (or "does not fit" when the block exceeds a per-block limit)
};

Occupancy estimate_occupancy(const SmLimits& sm, const LaunchShape& launch);

}  // namespace attnscope::profiler
