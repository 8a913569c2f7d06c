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
  return solve_with<grabcut_base::GridGraphView>(solver, a, source_side);
}

}  // namespace mincut_ab
