// This tree's GridMaxflowSolver against another revision's (mincut_ab_base.cpp), side by
// side in one process: the same flows and canonical cuts, and best-of-N times taken in
// alternating order (base then new, new then base), so that a shared machine's drift
// falls on both.
//
//   git show REV:csrc/core/maxflow.cpp > /tmp/base_maxflow.cpp
//   cmake -S . -B build-ab -DCMAKE_BUILD_TYPE=Release -DGRABCUT_AB_BASE=/tmp/base_maxflow.cpp
//   cmake --build build-ab --target bench_mincut_ab
//   python bench/mincut_bench.py --dump /tmp/seg --images 6 --size 1024
//   ./build-ab/bench_mincut_ab [--reps 7] [--grabcut] /tmp/seg/*.tgcg
//   ./build-ab/bench_mincut_ab --random 1000
//   ./build-ab/bench_mincut_ab --reps 3 --synthetic 1024 1024 1
//
// Graph files (tests/common/graph_file.h) are solved as the mincut op solves them (pair
// form, no flow kept, serial strips, one thread, the 4-neighbour path where the diagonals
// are zero), or with --grabcut as GrabCut's first solve (net form, flow kept, in one
// piece); --threads N (set_num_threads, 0 automatic) and --serial-strips 0|1 override
// the threads and the strips. --random N checks N random graphs, each solved cold and warm, in the net and
// the pair form, in one piece, in serial strips and on 2 threads; it times nothing. The
// exit status is 1 if any flow or cut differs.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/mincut_ab_base.h"
#include "common/grabcut_graph.h"
#include "common/graph_file.h"
#include "common/grid_graph.h"
#include "core/maxflow.h"

namespace {

using grabcut::testing::HostGridGraph;
using mincut_ab::SolveArgs;

std::int64_t new_solve(grabcut::GridMaxflowSolver& solver, const SolveArgs& a, std::uint8_t* source_side) {
  return mincut_ab::solve_with<grabcut::GridGraphView>(solver, a, source_side);
}

// A graph and its pair form (source = max(t, 0) + extra, sink = source - t).
struct Graph {
  HostGridGraph g;
  std::vector<std::int32_t> source;
  std::vector<std::int32_t> sink;
  bool four_connected = true;

  explicit Graph(HostGridGraph graph, std::int32_t extra = 0) : g(std::move(graph)) {
    source.resize(g.size());
    sink.resize(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) {
      source[i] = std::max(g.terminal[i], 0) + extra;
      sink[i] = source[i] - g.terminal[i];
      if (g.nlink[grabcut::kDownRight][i] != 0 || g.nlink[grabcut::kDownLeft][i] != 0) four_connected = false;
    }
  }
  SolveArgs args(bool pair) const {
    SolveArgs a;
    a.height = g.height;
    a.width = g.width;
    if (pair) {
      a.source = source.data();
      a.sink = sink.data();
    } else {
      a.terminal = g.terminal.data();
    }
    for (int d = 0; d < 4; ++d) {
      const bool diagonal = d == grabcut::kDownRight || d == grabcut::kDownLeft;
      a.nlink[d] = four_connected && diagonal ? nullptr : g.nlink[d].data();
    }
    a.four_connected = four_connected;
    return a;
  }
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int check_random(int count) {
  std::mt19937_64 rng(777);
  const auto below = [&rng](std::int64_t n) { return static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(n)); };
  grabcut::GridMaxflowSolver solver;
  int differing = 0;
  for (int i = 0; i < count; ++i) {
    const bool large = i % 10 == 0;
    const int h = 1 + below(large ? 400 : 40);
    const int w = 1 + below(large ? 400 : 40);
    const int kind = below(7);  // terminal and n-link regimes, as below
    const bool eight = below(2) == 1;
    const std::int32_t tmax = kind == 0 ? 3 : kind == 1 ? 100 : kind == 2 ? 1000000 : 50;
    const std::int32_t nmax = kind == 0 ? 3 : kind == 3 ? 1 : kind == 4 ? 200 : 60;
    HostGridGraph g(h, w);
    for (auto& t : g.terminal) {
      t = kind == 6 ? (below(3) == 0 ? below(1001) - 500 : 0) : below(2 * std::int64_t{tmax} + 1) - tmax;
    }
    grabcut::testing::set_nlinks(g, eight, [&](int y, int x, int d) {
      if (kind == 5) return (y / 2 + x / 7) % 3 == 0 && d != 0 ? 0 : 1 + below(30);  // walls: long corridors
      return below(std::int64_t{nmax} + 1);
    });
    const Graph graph(std::move(g), kind == 1 ? 3 : 0);
    const int threads = i % 3 == 0 ? 2 : 1;
    for (int variant = 0; variant < 6; ++variant) {
      SolveArgs a = graph.args((variant & 1) != 0);
      a.threads = threads;
      a.warm = variant >= 4;
      a.serial_strips = (variant & 2) != 0 && !a.warm;
      a.keep_flow = true;
      std::vector<std::uint8_t> base_side(graph.g.size());
      std::vector<std::uint8_t> new_side(graph.g.size());
      if (a.warm) {  // first a cold solve of other terminals, whose flow the warm solve starts from
        HostGridGraph perturbed = graph.g;
        for (auto& t : perturbed.terminal) t += below(21) - 10;
        const Graph other(std::move(perturbed));
        SolveArgs cold = other.args(false);
        cold.threads = threads;
        cold.keep_flow = true;
        cold.serial_strips = false;
        mincut_ab::base_solve(cold, base_side.data());
        new_solve(solver, cold, new_side.data());
      }
      const std::int64_t base_flow = mincut_ab::base_solve(a, base_side.data());
      const std::int64_t new_flow = new_solve(solver, a, new_side.data());
      if (base_flow != new_flow || base_side != new_side) {
        if (++differing <= 10) {
          std::printf("DIFFERENT: graph %d (%dx%d, kind %d, %s), variant %d, %d threads: flow %lld / %lld%s\n", i, h, w,
                      kind, eight ? "8-conn" : "4-conn", variant, threads, static_cast<long long>(base_flow),
                      static_cast<long long>(new_flow), base_side == new_side ? "" : ", cuts differ");
        }
      }
    }
  }
  std::printf("random: %d graphs, 6 solves each, %d differ\n", count, differing);
  return differing == 0 ? 0 : 1;
}

// Base and new alternating, `reps` times each, on the same arguments: each side's best
// time (seconds), flow and cut, and whether both sides agree.
struct AbTiming {
  double best[2] = {1e30, 1e30};  // base, new
  std::int64_t flow[2] = {0, 0};
  bool same = false;
};

AbTiming time_ab(grabcut::GridMaxflowSolver& solver, const SolveArgs& a, std::size_t pixels, int reps) {
  AbTiming t;
  std::vector<std::uint8_t> side[2] = {std::vector<std::uint8_t>(pixels), std::vector<std::uint8_t>(pixels)};
  for (int r = 0; r < reps; ++r) {
    for (int k = 0; k < 2; ++k) {
      const int which = (k == 0) == (r % 2 == 0) ? 0 : 1;
      const auto t0 = std::chrono::steady_clock::now();
      t.flow[which] = which == 0 ? mincut_ab::base_solve(a, side[0].data()) : new_solve(solver, a, side[1].data());
      t.best[which] = std::min(t.best[which], seconds_since(t0));
    }
  }
  t.same = t.flow[0] == t.flow[1] && side[0] == side[1];
  return t;
}

// Best of `reps` for each of the three ways, base and new alternating; also each way's
// time against the one-piece solve of the same revision.
int time_synthetic(int h, int w, std::uint64_t seed, int reps) {
  const Graph graph(grabcut::testing::grabcut_graph(h, w, seed));
  struct Way {
    const char* name;
    int threads;
    bool serial_strips;
  };
  const Way ways[] = {
      {"1 thread, one piece", 1, false}, {"automatic threads", 0, false}, {"1 thread, serial strips", 1, true}};
  grabcut::GridMaxflowSolver solver;
  bool all_same = true;
  double one_piece[2] = {0, 0};
  for (const Way& way : ways) {
    SolveArgs a = graph.args(false);
    a.keep_flow = true;
    a.serial_strips = way.serial_strips;
    a.threads = way.threads;
    const AbTiming t = time_ab(solver, a, graph.g.size(), reps);
    const double* best = t.best;
    const bool same = t.same;
    all_same = all_same && same;
    if (way.threads == 1 && !way.serial_strips) {
      one_piece[0] = best[0];
      one_piece[1] = best[1];
    }
    std::printf("grabcut_graph(%d, %d, %llu) %-24s flow %lld %s  base %8.1f ms (%.2fx one piece)  new %8.1f ms "
                "(%.2fx one piece)  base/new %.2fx\n",
                h, w, static_cast<unsigned long long>(seed), way.name, static_cast<long long>(t.flow[1]),
                same ? "same" : "DIFFERENT", best[0] * 1e3, best[0] / one_piece[0], best[1] * 1e3,
                best[1] / one_piece[1], best[0] / best[1]);
  }
  return all_same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 7;
  int random = 0;
  bool grabcut_form = false;
  int synthetic[3] = {0, 0, 0};
  int threads = 1;
  int serial_strips = -1;  // the form's default
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--reps" && i + 1 < argc) {
      reps = std::stoi(argv[++i]);
    } else if (arg == "--random" && i + 1 < argc) {
      random = std::stoi(argv[++i]);
    } else if (arg == "--synthetic" && i + 3 < argc) {
      for (int& v : synthetic) v = std::stoi(argv[++i]);
    } else if (arg == "--threads" && i + 1 < argc) {
      threads = std::stoi(argv[++i]);
    } else if (arg == "--serial-strips" && i + 1 < argc) {
      serial_strips = std::stoi(argv[++i]);
    } else if (arg == "--grabcut") {
      grabcut_form = true;
    } else {
      files.push_back(arg);
    }
  }
  if (random > 0) return check_random(random);
  if (synthetic[0] > 0) {
    return time_synthetic(synthetic[0], synthetic[1], static_cast<std::uint64_t>(synthetic[2]), reps);
  }

  grabcut::GridMaxflowSolver solver;
  std::vector<double> ratios[2];  // 4-, 8-connected
  bool all_same = true;
  for (const std::string& file : files) {
    const Graph graph(grabcut::testing::read_graph_file(file));
    SolveArgs a = graph.args(!grabcut_form);
    a.keep_flow = grabcut_form;
    a.serial_strips = serial_strips < 0 ? !grabcut_form : serial_strips != 0;
    a.threads = threads;
    const AbTiming t = time_ab(solver, a, graph.g.size(), reps);
    const double* best = t.best;
    const bool same = t.same;
    all_same = all_same && same;
    std::printf("%-32s %d-conn flow %lld %s  base %8.2f ms  new %8.2f ms  base/new %.2fx\n", file.c_str(),
                graph.four_connected ? 4 : 8, static_cast<long long>(t.flow[0]), same ? "same" : "DIFFERENT",
                best[0] * 1e3, best[1] * 1e3, best[0] / best[1]);
    ratios[graph.four_connected ? 0 : 1].push_back(best[0] / best[1]);
  }
  for (int c = 0; c < 2; ++c) {
    std::vector<double>& r = ratios[c];
    if (r.empty()) continue;
    std::sort(r.begin(), r.end());
    const std::size_t n = r.size();
    const double median = n % 2 == 1 ? r[n / 2] : 0.5 * (r[n / 2 - 1] + r[n / 2]);
    std::printf("%d-conn: base/new median %.2fx, lowest %.2fx\n", c == 0 ? 4 : 8, median, r.front());
  }
  return all_same ? 0 : 1;
}
