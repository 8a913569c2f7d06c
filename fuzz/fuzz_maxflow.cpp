// Fuzz target of the grid max-flow (core/maxflow.h): random grid graphs from 0 x 0
// up to kMaxPixels nodes with terminals anywhere in int32 and n-links anywhere in
// [0, 2^30 - 1] (and, now and then, an invalid n-link, which must be rejected).
//
// Properties checked on every graph:
//   * the value returned equals the capacity of the returned cut (computed here and
//     by core::cut_capacity) and, on graphs up to kMaxReferenceNodes nodes, the
//     maximum flow of an independent Dinic solver;
//   * the returned cut is the canonical one (the pixels that cannot reach the sink
//     in a maximum flow's residual graph), equal to the one derived from Dinic
//     (larger graphs: equal to a fresh solver's serial cold solve);
//   * the cut and value do not depend on the solver's thread count (strips);
//   * a warm solve after a terminal change, an n-link change or a size change
//     equals a cold solve;
//   * a solver that threw on invalid input solves the next graph correctly;
//   * the pair form (source and sink capacities given apart, read and checked by the
//     solver's fill, as torchgrabcut.mincut passes int32 input) gives the net form's
//     cut and its value plus the sum of min(source, sink), or throws exactly when a
//     capacity leaves [0, 2^30 - 1] or a node's sum exceeds its bound.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "common/grid_graph.h"
#include "core/maxflow.h"
#include "fuzz_common.h"

namespace {

using fuzz::Reader;
using fuzz::Stream;

constexpr std::int32_t kMaxNlink = (std::int32_t{1} << 30) - 1;
using grabcut::testing::kForwardDx;
using grabcut::testing::kForwardDy;

struct Graph : grabcut::testing::HostGridGraph {
  bool valid = true;  // every in-grid n-link in [0, 2^30 - 1]
};

// Values come from the input while it lasts, then from a stream seeded by it, so
// small graphs are fully under the fuzzer's control and large ones still vary.
class Source {
 public:
  Source(Reader& in, std::uint64_t seed) : in_(in), rng_(seed) {}
  std::uint32_t u32() { return in_.remaining() >= 4 ? in_.u32() : static_cast<std::uint32_t>(rng_.next()); }
  std::uint8_t u8() { return in_.remaining() >= 1 ? in_.u8() : static_cast<std::uint8_t>(rng_.next()); }

 private:
  Reader& in_;
  Stream rng_;
};

std::int32_t as_i32(std::uint32_t v) {
  return static_cast<std::int32_t>(static_cast<std::int64_t>(v) - (v >= 0x80000000U ? (std::int64_t{1} << 32) : 0));
}

std::int32_t make_terminal(int style, Source& src) {
  const std::uint32_t r = src.u32();
  switch (style) {
    case 0:
      return static_cast<std::int32_t>(r % 17) - 8;
    case 1:
      return static_cast<std::int32_t>(static_cast<std::int16_t>(r & 0xFFFFU));
    case 2: {
      constexpr std::int32_t kExtremes[] = {std::numeric_limits<std::int32_t>::min(),
                                            std::numeric_limits<std::int32_t>::max(),
                                            std::numeric_limits<std::int32_t>::min() + 1,
                                            std::numeric_limits<std::int32_t>::max() - 1,
                                            0,
                                            1,
                                            -1,
                                            kMaxNlink,
                                            -kMaxNlink};
      return kExtremes[r % (sizeof kExtremes / sizeof kExtremes[0])];
    }
    case 3:  // GrabCut-like: mostly +-lambda or small
      return (r & 3U) == 0 ? ((r & 4U) != 0 ? 115200 : -115200) : static_cast<std::int32_t>((r >> 3U) % 4001) - 2000;
    default:
      return as_i32(r);
  }
}

std::int32_t make_nlink(int style, Source& src) {
  const std::uint32_t r = src.u32();
  switch (style) {
    case 0:
      return 0;
    case 1:
      return static_cast<std::int32_t>(r % 9);
    case 2:
      return static_cast<std::int32_t>(r % 12801);
    case 3: {
      constexpr std::int32_t kExtremes[] = {0, 1, kMaxNlink, kMaxNlink - 1, 1 << 29};
      return kExtremes[r % (sizeof kExtremes / sizeof kExtremes[0])];
    }
    default:
      return static_cast<std::int32_t>(r & static_cast<std::uint32_t>(kMaxNlink));
  }
}

Graph make_graph(Reader& in, int max_pixels) {
  Graph g;
  const fuzz::Size size = fuzz::read_size(in, max_pixels);
  g.height = size.h;
  g.width = size.w;
  const int term_style = in.u8() % 5;
  const int nlink_style = in.u8() % 5;
  const std::uint8_t off_grid = in.u8();  // what the ignored entries hold
  const std::uint8_t invalid = in.u8();   // now and then one bad n-link
  Source src(in, in.u64());
  const std::size_t n = static_cast<std::size_t>(size.n());
  g.terminal.resize(n);
  for (auto& a : g.nlink) a.resize(n);
  for (int y = 0; y < g.height; ++y) {
    for (int x = 0; x < g.width; ++x) {
      const std::size_t p = static_cast<std::size_t>(y) * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(x);
      g.terminal[p] = make_terminal(term_style, src);
      for (int d = 0; d < 4; ++d) {
        if (g.has_neighbour(y, x, d)) {
          g.nlink[d][p] = make_nlink(nlink_style, src);
        } else {
          g.nlink[d][p] = (off_grid & 1U) != 0 ? as_i32(src.u32()) : 0;  // garbage must be ignored
        }
      }
    }
  }
  if (invalid % 16 == 0 && n > 0) {
    const std::size_t p = src.u32() % n;
    const int d = static_cast<int>(src.u8() % 4);
    const int y = static_cast<int>(p / static_cast<std::size_t>(g.width));
    const int x = static_cast<int>(p % static_cast<std::size_t>(g.width));
    if (g.has_neighbour(y, x, d)) {
      constexpr std::int32_t kBad[] = {-1, std::numeric_limits<std::int32_t>::min(), kMaxNlink + 1,
                                       std::numeric_limits<std::int32_t>::max()};
      g.nlink[d][p] = kBad[src.u8() % 4];
      g.valid = false;
    }
  }
  return g;
}

// The capacity of a cut, summed here independently of core::cut_capacity.
std::int64_t cut_value(const Graph& g, const std::vector<std::uint8_t>& side) {
  std::int64_t total = 0;
  for (int y = 0; y < g.height; ++y) {
    for (int x = 0; x < g.width; ++x) {
      const std::size_t p = static_cast<std::size_t>(y) * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(x);
      const std::int64_t t = g.terminal[p];
      if (side[p] != 0 && t < 0) total += -t;
      if (side[p] == 0 && t > 0) total += t;
      for (int d = 0; d < 4; ++d) {
        if (!g.has_neighbour(y, x, d)) continue;
        const std::size_t q =
            static_cast<std::size_t>(y + kForwardDy[d]) * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(x + kForwardDx[d]);
        // Undirected: the n-link counts once whichever side is the source's.
        if (side[p] != side[q]) total += g.nlink[d][p];
      }
    }
  }
  return total;
}

struct Result {
  std::int64_t value = 0;
  std::vector<std::uint8_t> cut;
};

// One solve (cold or warm); checks that invalid graphs throw and valid ones do not.
// Returns false if it threw (as expected).
bool run_solver(grabcut::GridMaxflowSolver& solver, const Graph& g, bool warm, Result& out) {
  out.cut.assign(static_cast<std::size_t>(g.height) * static_cast<std::size_t>(g.width), 0xAB);
  try {
    out.value = warm ? solver.solve_warm(g.view(), out.cut.data()) : solver.solve(g.view(), out.cut.data());
  } catch (const std::invalid_argument&) {
    FUZZ_CHECK(!g.valid);
    return false;
  }
  FUZZ_CHECK(g.valid || g.height == 0 || g.width == 0);
  return true;
}

// Graphs up to this many nodes are also solved by the reference (Dinic); larger
// ones are compared with a fresh serial cold solve instead, to keep throughput.
constexpr std::size_t kMaxReferenceNodes = 1024;

// The expected result: Dinic's flow and canonical cut, or for large graphs a fresh
// solver's serial cold solve.
fuzz::ReferenceCut reference(const Graph& g) {
  if (g.height == 0 || g.width == 0) return {};
  if (g.terminal.size() > kMaxReferenceNodes) {
    grabcut::GridMaxflowSolver fresh;
    fresh.set_num_threads(1);
    fuzz::ReferenceCut r;
    r.source_side.assign(g.terminal.size(), 0);
    r.flow = fresh.solve(g.view(), r.source_side.data());
    return r;
  }
  const std::int32_t* nl[4] = {g.nlink[0].data(), g.nlink[1].data(), g.nlink[2].data(), g.nlink[3].data()};
  return fuzz::reference_cut(g.height, g.width, g.terminal.data(), nl);
}

// Everything a correct solve must satisfy, against the reference.
void check_result(const Graph& g, const Result& r, const fuzz::ReferenceCut& ref) {
  if (g.height == 0 || g.width == 0) {
    FUZZ_CHECK(r.value == 0);
    return;
  }
  for (std::uint8_t s : r.cut) FUZZ_CHECK(s == 0 || s == 1);
  FUZZ_CHECK(r.value == cut_value(g, r.cut));
  FUZZ_CHECK(r.value == grabcut::cut_capacity(g.view(), r.cut.data()));
  FUZZ_CHECK(r.value == ref.flow);
  FUZZ_CHECK(r.cut == ref.source_side);
}

// The capacity of the arc in direction d of pixel (y, x) and of its reverse at the
// neighbour: the n-link of the pair, 0 off the grid.
std::int64_t nlink_at(const Graph& g, int y, int x, int d) {
  if (y < 0 || x < 0 || y >= g.height || x >= g.width || !g.has_neighbour(y, x, d)) return 0;
  return g.nlink[d][static_cast<std::size_t>(y) * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(x)];
}

// The pair form of a valid graph: source and sink with source - sink = its terminal,
// plus an extra amount on both (which the flow value carries once), now and then out
// of bounds or over a node-sum bound, which the solver must refuse.
void check_pair_form(const Graph& g, const Result& net, Reader& in) {
  const std::size_t n = g.terminal.size();
  if (n == 0) return;
  Source src(in, in.u64() ^ 0xA5A5U);
  const int extra_style = in.u8() % 4;  // none, small, large, now and then past the bound
  const std::uint8_t bound_style = in.u8();
  std::vector<std::int32_t> source(n);
  std::vector<std::int32_t> sink(n);
  std::int64_t both = 0;
  bool in_range = true;
  for (std::size_t p = 0; p < n; ++p) {
    const std::int64_t t = g.terminal[p];
    std::int64_t extra = 0;
    if (extra_style == 1) extra = src.u32() % 100;
    if (extra_style == 2) extra = src.u32() % (1U << 29U);
    if (extra_style == 3) extra = src.u8() % 64 == 0 ? kMaxNlink : src.u32() % 16;
    std::int64_t s = std::max<std::int64_t>(t, 0) + extra;
    std::int64_t k = std::max<std::int64_t>(-t, 0) + extra;
    if (s > std::numeric_limits<std::int32_t>::max() || k > std::numeric_limits<std::int32_t>::max()) {
      s -= extra;  // int32 must hold them; a terminal of INT32_MIN cannot be a pair
      k -= extra;
      extra = 0;
      if (k > std::numeric_limits<std::int32_t>::max()) return;
    }
    source[p] = static_cast<std::int32_t>(s);
    sink[p] = static_cast<std::int32_t>(k);
    both += extra;
    in_range = in_range && s <= kMaxNlink && k <= kMaxNlink;
  }
  grabcut::GridGraphView view = g.view();
  view.terminal = nullptr;
  view.source = source.data();
  view.sink = sink.data();
  if (bound_style % 4 == 0) view.max_node_sum = 1 + src.u32() % (1U << 20U);
  bool diagonals_zero = true;
  std::int64_t max_sum = 0;
  for (int y = 0; y < g.height; ++y) {
    for (int x = 0; x < g.width; ++x) {
      const std::size_t p = static_cast<std::size_t>(y) * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(x);
      std::int64_t sum = std::int64_t{source[p]} + sink[p];
      for (int d = 0; d < 4; ++d) {
        sum += nlink_at(g, y, x, d) + nlink_at(g, y - kForwardDy[d], x - kForwardDx[d], d);
        if (d == 1 || d == 3) diagonals_zero = diagonals_zero && nlink_at(g, y, x, d) == 0;
      }
      max_sum = std::max(max_sum, sum);
    }
  }
  view.four_connected = diagonals_zero && (bound_style & 4U) != 0;
  const bool valid = in_range && max_sum <= view.max_node_sum;

  grabcut::GridMaxflowSolver solver;
  solver.set_num_threads(bound_style >> 6U);
  std::vector<std::uint8_t> cut(n, 0xAB);
  std::int64_t value = 0;
  try {
    value = solver.solve(view, cut.data());
  } catch (const std::invalid_argument&) {
    FUZZ_CHECK(!valid);
    // The solver recovers: the net form on the same solver.
    Result again;
    FUZZ_CHECK(run_solver(solver, g, false, again));
    FUZZ_CHECK(again.value == net.value && again.cut == net.cut);
    return;
  }
  FUZZ_CHECK(valid);
  FUZZ_CHECK(cut == net.cut);
  FUZZ_CHECK(value == net.value + both);
}

void make_valid(Graph& g) {
  for (int y = 0; y < g.height; ++y)
    for (int x = 0; x < g.width; ++x)
      for (int d = 0; d < 4; ++d) {
        std::int32_t& c =
            g.nlink[d][static_cast<std::size_t>(y) * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(x)];
        if (g.has_neighbour(y, x, d) && (c < 0 || c > kMaxNlink)) c = 7;
      }
  g.valid = true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader in(data, size);
  const int threads_a = in.u8() % 4;  // 0 automatic, 1 serial, 2..3 strips
  const int threads_b = 1 + in.u8() % 4;
  const std::uint8_t plan = in.u8();
  Graph g = make_graph(in, fuzz::kMaxPixels);

  grabcut::GridMaxflowSolver solver;
  solver.set_num_threads(threads_a);
  Result first;
  if (!run_solver(solver, g, (plan & 1U) != 0, first)) {
    // The solver must recover: the same graph made valid, cold and warm.
    make_valid(g);
    const fuzz::ReferenceCut ref = reference(g);
    FUZZ_CHECK(run_solver(solver, g, (plan & 2U) != 0, first));
    check_result(g, first, ref);
    return 0;
  }
  const fuzz::ReferenceCut ref = reference(g);
  check_result(g, first, ref);

  // Another thread count, another solver: the same cut and value.
  {
    grabcut::GridMaxflowSolver other;
    other.set_num_threads(threads_b);
    Result r;
    FUZZ_CHECK(run_solver(other, g, false, r));
    FUZZ_CHECK(r.value == first.value && r.cut == first.cut);
  }
  check_pair_form(g, first, in);

  // Warm starts: a few terminal changes (as between GrabCut iterations), then
  // possibly an n-link change or a new size, each equal to the reference.
  Source src(in, in.u64() ^ 0x5A5AU);
  const int steps = 1 + in.u8() % 3;
  for (int step = 0; step < steps; ++step) {
    const int what = in.u8() % 8;
    const std::size_t n = g.terminal.size();
    if (what < 5 && n > 0) {
      const int style = in.u8() % 5;
      const int changes = 1 + in.u8() % 16;
      for (int c = 0; c < changes; ++c) g.terminal[src.u32() % n] = make_terminal(style, src);
      if (what == 0) {  // flip every sign: a very different terminal set
        for (auto& t : g.terminal)
          t = t == std::numeric_limits<std::int32_t>::min() ? std::numeric_limits<std::int32_t>::max() : -t;
      }
    } else if (what < 7 && n > 0) {
      const std::size_t p = src.u32() % n;
      const int d = static_cast<int>(src.u8() % 4);
      const int y = static_cast<int>(p / static_cast<std::size_t>(g.width));
      const int x = static_cast<int>(p % static_cast<std::size_t>(g.width));
      if (g.has_neighbour(y, x, d)) g.nlink[d][p] = make_nlink(4, src);
    } else {
      g = make_graph(in, 256);
    }
    Result r;
    if (!run_solver(solver, g, true, r)) {
      make_valid(g);
      FUZZ_CHECK(run_solver(solver, g, true, r));
    }
    check_result(g, r, reference(g));
  }
  return 0;
}
