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

// One solve of `args` by either revision's solver: View is that revision's GridGraphView
// (the two namespaces' types differ, their members do not).
template <class View, class Solver>
std::int64_t solve_with(Solver& solver, const SolveArgs& a, std::uint8_t* source_side) {
  solver.set_keep_flow(a.keep_flow);
  solver.set_serial_strips(a.serial_strips);
  solver.set_num_threads(a.threads);
  View g;
  g.height = a.height;
  g.width = a.width;
  g.terminal = a.terminal;
  g.source = a.source;
  g.sink = a.sink;
  for (int d = 0; d < 4; ++d) g.nlink[d] = a.nlink[d];
  g.four_connected = a.four_connected;
  g.max_node_sum = a.max_node_sum;
  return a.warm ? solver.solve_warm(g, source_side) : solver.solve(g, source_side);
}

}  // namespace mincut_ab
