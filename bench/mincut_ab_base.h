// The call between bench_mincut_ab and the other revision's solver (mincut_ab_base.cpp):
// plain values only, since the two solvers' types live in different namespaces.
#pragma once

#include <cstdint>

namespace mincut_ab {

struct SolveArgs {
  int height = 0;
  int width = 0;
  const std::int32_t* terminal = nullptr;  // the net form, or null for the pair form
  const std::int32_t* source = nullptr;
  const std::int32_t* sink = nullptr;
  const std::int32_t* nlink[4] = {nullptr, nullptr, nullptr, nullptr};
  bool four_connected = false;
  std::int64_t max_node_sum = (std::int64_t{1} << 30) - 1;
  bool keep_flow = false;
  bool serial_strips = true;
  int threads = 1;
  bool warm = false;
};

std::int64_t base_solve(const SolveArgs& args, std::uint8_t* source_side);

}  // namespace mincut_ab
