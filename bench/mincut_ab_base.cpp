// The other side of bench_mincut_ab: another revision's core/maxflow.cpp (the file named
// by GRABCUT_AB_BASE_SOURCE, e.g. `git show REV:csrc/core/maxflow.cpp > /tmp/base.cpp`),
// compiled in namespace grabcut_base so that it links beside this tree's solver, and
// called through one plain function.
#define grabcut grabcut_base
#include GRABCUT_AB_BASE_SOURCE
#undef grabcut

#include "bench/mincut_ab_base.h"

namespace mincut_ab {

std::int64_t base_solve(const SolveArgs& a, std::uint8_t* source_side) {
  static grabcut_base::GridMaxflowSolver solver;
  solver.set_keep_flow(a.keep_flow);
  solver.set_serial_strips(a.serial_strips);
  solver.set_num_threads(a.threads);
  grabcut_base::GridGraphView g;
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
