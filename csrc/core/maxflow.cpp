// Exact s-t max-flow on an 8- or 4-connected pixel grid (see maxflow.h for the graph).
//
// The solver is an augmenting-path algorithm of the incremental breadth-first search
// family (IBFS: Goldberg, Hed, Kaplan, Tarjan and Werneck, "Maximum Flows by
// Incremental Breadth-First Search", ESA 2011), written for the grid from the
// paper's description. Like Boykov and Kolmogorov's algorithm (PAMI 2004) it grows
// two search trees, S from the source and T to the sink, augments along the path
// where they meet and repairs the trees; unlike it, every tree node carries a label
// that is strictly larger than its parent's, so that repairing a tree needs no walk:
//
//   * the trees grow in passes, one level at a time (a node's children get its label
//     plus one), S and T in turn;
//   * an augmentation saturates arcs of the path; the nodes below them become orphans;
//   * an orphan takes as its parent any neighbour of its tree with a smaller label
//     and a residual arc toward it (the chain of parents from there only falls in
//     label, so it cannot come back to the orphan); failing that it is relabelled to
//     one more than its smallest such neighbour (its children that are no longer
//     above it become orphans), unless that passes the tree's next level or it has
//     none: then it leaves the tree, its children orphans, and the nodes of its tree
//     with an arc toward it are scanned again.
//
// Why this search: Boykov and Kolmogorov's adoption checks a candidate parent by
// walking its chain to the terminal, and on segmentation graphs most of the search
// was those walks; here an orphan looks only at its K neighbours. Why strict turns:
// growing the tree with fewer nodes to scan lets one tree run levels ahead of the
// other, and its relabels and frees then cost more than the walks they replace
// (bench/RESULTS.md, issue 36, session 43, has the measurements).
//
// Before the trees are seeded, one raster pass sends flow along every path
// source -> p -> q -> sink made of a single n-link arc; in GrabCut graphs, where
// neighbouring pixels often have opposite terminals, that carries much of the
// flow at the cost of one sweep. A cold solve then makes up to two push sweeps
// (push_toward_sinks): source residual flows down the breadth-first distances to
// the pixels whose sink residual no inflow can use up (in GrabCut the hard
// background), which moves flow over long distances in aggregate rather than one
// augmenting path at a time; a sweep is skipped where those pixels could take only
// a small part of the source residual (segmentation graphs with soft unaries have
// almost none), since it then costs more than it saves. The trees then start from
// whatever terminal residual is left.
//
// Terminal residuals need not stay within the pixel's terminal capacity: moving
// residual r from p to q along an n-link arc (a push), or adding a terminal change
// to a kept flow (a warm start, see maxflow.h), gives the residual graph of a flow
// in a graph that has, at some pixels, the same capacity added to both terminal
// edges. That adds a constant to every cut and leaves the minimum cuts, and so the
// canonical cut, unchanged. The flow value found is then that of the other graph,
// so solve() returns the capacity of the canonical cut in the graph as given,
// which equals its maximum flow value.
//
// A solve of a large grid (cold or warm) may first solve horizontal strips in
// parallel, in place, each on its own (solve_in_strips), with a separator row
// between neighbouring strips; their flows together are a flow of the whole graph
// and their search trees valid trees of it. One thread then finishes the whole
// grid, continuing the search from the separators and the rows beside them.
//
// There is no adjacency list: a node's K neighbours (K = 8, or 4 for a graph whose
// diagonal n-links are all zero; see Neighbourhood) are at fixed index offsets in a
// grid padded by one node on every side. The padding nodes have no arcs and are
// never in a tree, so no neighbour access needs a bounds check. The residual
// capacities of the K arcs leaving a node lie next to each other in one flat int32
// array (arc d of node p at residual[K * p + d]), and direction d ^ (K / 2) is the
// opposite of d, so the reverse of arc (p, d) is arc (p + offset[d], d ^ (K / 2)).
//
// Integer ranges: the two directed arcs of an n-link of capacity c always have
// residuals adding up to 2c, so n-links below 2^30 keep every residual in int32.
// An augmentation moves terminal residuals only toward zero, and every augmenting
// path contains at least one n-link arc, so every bottleneck fits in int32. A push
// is cut short where it would take a residual past INT32_MAX, and a warm start
// whose new residual would leave int32 is a cold solve instead. The returned cut
// capacity is summed in int64. Terminals may be any int32 value.
//
// The search ends when T can grow no more: no node outside T then has a residual arc
// into it, so no augmenting path is left, the flow is maximum, and T is exactly the
// set of pixels that can reach the sink over arcs with positive residual; all other
// pixels form the canonical (largest minimum) source set (compute_cut).
#include "core/maxflow.h"

#include <omp.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace grabcut {
namespace {

// The neighbourhood of the solver's nodes. Every graph can be solved with all 8
// neighbours (K = 8): directions 0..3 are the forward n-links of maxflow.h (kRight,
// kDownRight, kDown, kDownLeft) and 4..7 their opposites (left, up-left, up,
// up-right). A graph whose diagonal n-links are all zero (a 4-connected graph) is
// solved with the 4 axis neighbours only (K = 4): directions right, down, left, up,
// so that a node's arcs, its residuals and every scan of its neighbours cost half.
// In both, direction d + K / 2 is the opposite of d, and the K = 4 directions are
// the K = 8 ones without the diagonals, in the same order: the K = 4 solver visits
// the arcs with residual capacity in the order the K = 8 solver does on the same
// graph (its diagonal arcs are all zero and never used), so both compute the same
// flow, arc for arc.
template <int K>
struct Neighbourhood;
template <>
struct Neighbourhood<8> {
  static constexpr int kDy[8] = {kForwardDy[0],  kForwardDy[1],  kForwardDy[2],  kForwardDy[3],
                                 -kForwardDy[0], -kForwardDy[1], -kForwardDy[2], -kForwardDy[3]};
  static constexpr int kDx[8] = {kForwardDx[0],  kForwardDx[1],  kForwardDx[2],  kForwardDx[3],
                                 -kForwardDx[0], -kForwardDx[1], -kForwardDx[2], -kForwardDx[3]};
  // The n-link of maxflow.h (GridGraphView::nlink) of each forward direction.
  static constexpr int kNlink[4] = {kRight, kDownRight, kDown, kDownLeft};
};
template <>
struct Neighbourhood<4> {
  static constexpr int kDy[4] = {0, 1, 0, -1};
  static constexpr int kDx[4] = {1, 0, -1, 0};
  static constexpr int kNlink[2] = {kRight, kDown};
};
static_assert(kRight == 0 && kDownRight == 1 && kDown == 2 && kDownLeft == 3,
              "direction numbering must match maxflow.h");

// Node::tree
constexpr std::uint8_t kFree = 0;
constexpr std::uint8_t kSourceTree = 1;
constexpr std::uint8_t kSinkTree = 2;
// Node::parent: 0..K-1 is the direction from the node to its parent.
constexpr std::uint8_t kParentTerminal = 8;
constexpr std::uint8_t kParentOrphan = 9;
constexpr std::uint8_t kNoParent = 10;

// 2c must fit in int32. All valid values have bits 30 and 31 clear.
constexpr std::int32_t kMaxNlinkCapacity = (std::int32_t{1} << 30) - 1;
constexpr int kInfiniteDistance = std::numeric_limits<int>::max();
// Push sweeps before the trees are seeded: in a cold solve (on real 1-MP GrabCut
// graphs 2 beat 1 and 3 by a few percent; within noise since the strips), in a
// warm solve (0: a sweep there costs about what it saves), and how many of them
// seed only the sinks no inflow can fill.
constexpr int kColdPushPasses = 2;
constexpr int kWarmPushPasses = 0;
constexpr int kStrongPasses = 2;
// A push sweep runs only if its seeds can take at least 1 / kMinSeedShare of the
// source residual (see push_toward_sinks).
constexpr std::int64_t kMinSeedShare = 8;
// Whether a push sweep whose seeds can take seed_capacity of the source residual
// excess_total is worth its passes (see push_toward_sinks).
bool sweep_pays(std::int64_t seed_capacity, std::int64_t excess_total) {
  return excess_total != 0 && seed_capacity >= excess_total / kMinSeedShare;
}

// Strips of a parallel solve per thread (see solve_in_strips): more strips even out
// strips of unequal cost (on 2 threads, a 1 MP segmentation graph whose halves
// differ most: 1.4x one thread with 2 a thread, 1.9-2.0x with 3), and 4 lost on
// segmentation graphs (more seams).
constexpr int kStripsPerThread = 3;

std::uint8_t as_parent(int d) { return static_cast<std::uint8_t>(d); }

// Per-node search state, 16 bytes, so one node's state is one access.
struct Node {
  // Residual terminal capacity: > 0 from the source to the node, < 0 from the
  // node to the sink (the magnitude is the capacity).
  std::int32_t terminal;
  std::int32_t reserved;  // keeps a node 16 bytes, a quarter of a cache line
  std::int32_t distance;  // the label (see maxflow.cpp's header): above the parent's; roots 1
  std::uint8_t tree;
  std::uint8_t parent;
  std::uint8_t active;  // the tree whose level lists hold the node's current entry, or 0
  std::uint8_t unused;
};
static_assert(sizeof(Node) == 16, "Node should stay 16 bytes");
// A node in no tree, zero terminal residual (the padding, and reset_search()).
constexpr Node kClearedNode = {0, 0, 0, kFree, kNoParent, 0, 0};

[[noreturn]] void throw_bad_nlink(std::int32_t c0, std::int32_t c1, std::int32_t c2, std::int32_t c3, int y, int x) {
  throw std::invalid_argument("GridMaxflowSolver: n-link capacities must be in [0, 2^30 - 1], got " +
                              std::to_string(c0) + ", " + std::to_string(c1) + ", " + std::to_string(c2) +
                              ", " + std::to_string(c3) + " at pixel (y=" + std::to_string(y) +
                              ", x=" + std::to_string(x) + ")");
}

// One test for several values: a value is out of [0, kMaxNlinkCapacity] iff bit 30
// or 31 is set.
bool out_of_range(std::uint32_t any_bits) { return any_bits > static_cast<std::uint32_t>(kMaxNlinkCapacity); }

// Checks row y of `graph` as fill_row does, from the graph alone: in the pair form
// every capacity and node sum of its pixels, in the net form the n-links its pixels
// own; throws std::invalid_argument at the first bad pixel. (A strip of a parallel
// solve fills its rows without the n-links that leave it; the rows beside a
// separator are checked here.)
void check_row(const GridGraphView& graph, int y) {
  const int h = graph.height;
  const int w = graph.width;
  const auto at = [&](int d, int yy, int xx) -> std::int64_t {
    const int ny = yy + kForwardDy[d];
    const int nx = xx + kForwardDx[d];
    const bool diagonal = d == kDownRight || d == kDownLeft;
    if (yy < 0 || ny >= h || xx < 0 || xx >= w || nx < 0 || nx >= w || (diagonal && graph.four_connected)) return 0;
    return graph.nlink[d][static_cast<std::size_t>(yy) * static_cast<std::size_t>(w) + static_cast<std::size_t>(xx)];
  };
  if (graph.terminal != nullptr) {
    for (int x = 0; x < w; ++x) {
      const auto c = [&](int d) { return static_cast<std::int32_t>(at(d, y, x)); };
      if (out_of_range(static_cast<std::uint32_t>(c(0)) | static_cast<std::uint32_t>(c(1)) |
                       static_cast<std::uint32_t>(c(2)) | static_cast<std::uint32_t>(c(3)))) {
        throw_bad_nlink(c(0), c(1), c(2), c(3), y, x);
      }
    }
    return;
  }
  for (int x = 0; x < w; ++x) {
    const std::size_t i = static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x);
    std::int64_t sum = std::int64_t{graph.source[i]} + graph.sink[i];
    bool bad = out_of_range(static_cast<std::uint32_t>(graph.source[i]) | static_cast<std::uint32_t>(graph.sink[i]));
    for (int d = 0; d < kNumForwardDirections; ++d) {
      const std::int64_t c = at(d, y, x);
      bad = bad || c < 0 || c > kMaxNlinkCapacity;
      sum += c + at(d, y - kForwardDy[d], x - kForwardDx[d]);
    }
    if (bad || sum > graph.max_node_sum) {
      throw std::invalid_argument(
          "GridMaxflowSolver: source, sink and n-link capacities must be in [0, 2^30 - 1] and add up to at most " +
          std::to_string(graph.max_node_sum) + " at every pixel; not so at pixel (y=" + std::to_string(y) +
          ", x=" + std::to_string(x) + ")");
    }
  }
}

// The first pixel of row y with a capacity out of range (or, in the pair form, a node
// sum over graph.max_node_sum), reported; called once fill_row found one.
[[noreturn]] void throw_bad_row(const GridGraphView& graph, int y) {
  check_row(graph, y);
  throw std::logic_error("GridMaxflowSolver: row " + std::to_string(y) + " failed a check no pixel fails");
}

// Rows [y0, y1) of `graph` as a graph of their own: the n-links that leave them are
// not read (filled as zero residuals) and not checked.
GridGraphView rows_of(const GridGraphView& graph, int y0, int y1) {
  const std::size_t first = static_cast<std::size_t>(y0) * static_cast<std::size_t>(graph.width);
  GridGraphView rows = graph;
  rows.height = y1 - y0;
  const auto shift = [first](const std::int32_t* plane) { return plane != nullptr ? plane + first : nullptr; };
  rows.terminal = shift(graph.terminal);
  rows.source = shift(graph.source);
  rows.sink = shift(graph.sink);
  for (int d = 0; d < kNumForwardDirections; ++d) rows.nlink[d] = shift(graph.nlink[d]);
  return rows;
}

// A few rows of bytes (3 unless reset says more), one a node, that the row passes
// test 8 neighbouring nodes at a time: grid row y (-1 .. height) at slot
// (y + 1) % slots, column x at x + 1, zero in the padding columns and up to a
// multiple of 8 columns. The bytes are tree values (kFree, kSourceTree, kSinkTree):
// those of the seeded roots, or of the signs of the terminal residuals.
struct RowRing {
  std::vector<std::uint8_t> bytes;
  int stride = 0;
  int slots = 3;
  void reset(int width, int rows = 3) {
    stride = (width + 7) / 8 * 8 + 2;
    slots = rows;
    bytes.assign(static_cast<std::size_t>(slots) * static_cast<std::size_t>(stride), kFree);
  }
  std::uint8_t* row(int y) {
    return bytes.data() + static_cast<std::size_t>((y + 1) % slots) * static_cast<std::size_t>(stride);
  }
  void clear(int y) { std::fill_n(row(y), stride, kFree); }
};

// The tree a terminal residual's sign stands for.
std::uint8_t tree_of(std::int32_t terminal) {
  return terminal > 0 ? kSourceTree : (terminal < 0 ? kSinkTree : kFree);
}

// Eight bytes of a RowRing row from `at`, as one word. The tests on such words work
// byte by byte, so they hold in either byte order; a shift by 1 moves bit 1 of each
// byte to its bit 0, and kLowBytes keeps bit 0 of each byte.
std::uint64_t ring_word(const std::uint8_t* at) {
  std::uint64_t v;
  std::memcpy(&v, at, sizeof(v));
  return v;
}
constexpr std::uint64_t kLowBytes = 0x0101010101010101ULL;

// Calls f(i) for every byte i (0..7, in memory order, lowest first) of a word of
// ring_word()'s whose byte is nonzero, the word's bytes 0 or 1. Where the word's
// lowest bits hold the first byte, by counting trailing zeros: on the row passes'
// words (a few nonzero bytes of 8) a test of each byte mispredicted enough to cost
// a quarter of the root activation and of the short paths.
template <class F>
void for_each_set_byte(std::uint64_t word, F&& f) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  for (; word != 0; word &= word - 1) f(__builtin_ctzll(word) >> 3);
#else
  std::uint8_t lanes[8];
  std::memcpy(lanes, &word, sizeof(lanes));
  for (int i = 0; i < 8; ++i) {
    if (lanes[i] != 0) f(i);
  }
#endif
}

// What pixels of a row add to its checks and sums (fill_row_of()'s pixels one at a
// time, fill_inner_pixels() four at a time): any bit 30 or 31 set in a capacity, any
// node sum over the bound (pair form), and the row's FillTotals.
struct FillSums {
  std::uint32_t bits = 0;
  bool over = false;
  std::int64_t strong = 0;
  std::int64_t excess = 0;
  std::int64_t given = 0;
};

#if defined(__SSE2__)
// The n-links and terminals fill_row_of() reads for the pixels of one row: pixel x's
// arc d reads the plane's entry at x (right, down, down_right, down_left, up) or at
// x - 1 (left, up_left: right and up_left at x - 1) or x + 1 (up_right).
struct FillRowInputs {
  const std::int32_t* right;
  const std::int32_t* down;
  const std::int32_t* up;
  const std::int32_t* down_right;
  const std::int32_t* down_left;
  const std::int32_t* up_left;
  const std::int32_t* up_right;
  const std::int32_t* source;
  const std::int32_t* sink;
};

__m128i load4(const std::int32_t* at) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at)); }
void store4(void* at, __m128i v) { _mm_storeu_si128(static_cast<__m128i*>(at), v); }
// The four 32-bit lanes of a, b, c, e as four rows: lane i of the result i holds
// (a_i, b_i, c_i, e_i).
void transpose4(__m128i a, __m128i b, __m128i c, __m128i e, __m128i out[4]) {
  const __m128i ab_lo = _mm_unpacklo_epi32(a, b);
  const __m128i ce_lo = _mm_unpacklo_epi32(c, e);
  const __m128i ab_hi = _mm_unpackhi_epi32(a, b);
  const __m128i ce_hi = _mm_unpackhi_epi32(c, e);
  out[0] = _mm_unpacklo_epi64(ab_lo, ce_lo);
  out[1] = _mm_unpackhi_epi64(ab_lo, ce_lo);
  out[2] = _mm_unpacklo_epi64(ab_hi, ce_hi);
  out[3] = _mm_unpackhi_epi64(ab_hi, ce_hi);
}
// Non-negative 32-bit lanes added into two 64-bit lanes.
__m128i add_wide(__m128i sum, __m128i v) {
  const __m128i zero = _mm_setzero_si128();
  return _mm_add_epi64(sum, _mm_add_epi64(_mm_unpacklo_epi32(v, zero), _mm_unpackhi_epi32(v, zero)));
}
std::int64_t lanes_sum(__m128i v) {
  std::int64_t l[2];
  std::memcpy(l, &v, sizeof(l));
  return l[0] + l[1];
}

// fill_row_of()'s work (pair form, seeding) for the inner pixels x = 1, 2, ... of a
// row, four at a time; returns the first pixel it did not fill. The scalar loop, one
// pixel at a time, was compute bound (about twice the time of a loop that moves the
// same bytes), and the compiler does not vectorise it: its stores interleave K
// residuals and a Node per pixel. Results are the scalar loop's, bit for bit, for
// every row the checks pass (a row that fails them throws, whatever was written):
// the node-sum and strong-sink tests, whose sums may pass 2^31, are made as chains
// of subtractions of the arcs in pairs that stay exact while the test can still hold
// (every value below 2^30, so a pair below 2^31; max_node_sum below 2^31).
template <int K>
int fill_inner_pixels(const FillRowInputs& in, int w, std::int32_t max_node_sum, std::int32_t* rc, Node* node,
                      std::uint8_t* trees, std::uint8_t* in_sink, FillSums& lanes) {
  const __m128i zero = _mm_setzero_si128();
  const __m128i one = _mm_set1_epi32(1);
  const __m128i two = _mm_set1_epi32(2);
  const __m128i no_parent = _mm_set1_epi32(kNoParent);
  const __m128i bound = _mm_set1_epi32(max_node_sum);
  static_assert(kParentTerminal == kNoParent - 2, "a root's parent is kNoParent less 2");
  static_assert(kSourceTree == 1 && kSinkTree == 2, "tree values as masks of 1 and 2");
  __m128i bits = zero;
  __m128i over = zero;
  __m128i strong = zero;
  __m128i excess = zero;
  __m128i given = zero;
  int x = 1;
  for (; x + 4 < w; x += 4) {
    const __m128i s = load4(in.source + x);
    const __m128i k = load4(in.sink + x);
    const __m128i c0 = load4(in.right + x);
    const __m128i c2 = load4(in.down + x);
    const __m128i l = load4(in.right + x - 1);
    const __m128i u = load4(in.up + x);
    // The arcs in pairs: each pair's sum is below 2^31 where the checks pass.
    __m128i arcs[4] = {_mm_add_epi32(c0, c2), _mm_add_epi32(l, u), zero, zero};
    __m128i c1 = zero;
    __m128i c3 = zero;
    __m128i ul = zero;
    __m128i ur = zero;
    bits = _mm_or_si128(bits, _mm_or_si128(_mm_or_si128(s, k), _mm_or_si128(c0, c2)));
    if constexpr (K == 8) {
      c1 = load4(in.down_right + x);
      c3 = load4(in.down_left + x);
      ul = load4(in.up_left + x - 1);
      ur = load4(in.up_right + x + 1);
      arcs[2] = _mm_add_epi32(c1, c3);
      arcs[3] = _mm_add_epi32(ul, ur);
      bits = _mm_or_si128(bits, _mm_or_si128(c1, c3));
    }
    // s + k + the arcs > max_node_sum, and the strong sinks' k - s >= the arcs.
    const __m128i sk = _mm_add_epi32(s, k);
    const __m128i t = _mm_sub_epi32(s, k);
    const __m128i sink_residual = _mm_sub_epi32(k, s);
    over = _mm_or_si128(over, _mm_cmpgt_epi32(sk, bound));
    __m128i room = _mm_sub_epi32(bound, sk);
    __m128i is_strong = _mm_cmpgt_epi32(sink_residual, zero);
    __m128i strong_room = sink_residual;
    for (int d = 0; d < K / 2; ++d) {
      over = _mm_or_si128(over, _mm_cmpgt_epi32(arcs[d], room));
      room = _mm_sub_epi32(room, arcs[d]);
      is_strong = _mm_andnot_si128(_mm_cmpgt_epi32(arcs[d], strong_room), is_strong);
      strong_room = _mm_sub_epi32(strong_room, arcs[d]);
    }
    strong = add_wide(strong, _mm_and_si128(is_strong, sink_residual));
    const __m128i positive = _mm_cmpgt_epi32(t, zero);
    const __m128i negative = _mm_cmplt_epi32(t, zero);
    const __m128i rooted = _mm_or_si128(positive, negative);
    excess = add_wide(excess, _mm_and_si128(positive, t));
    given = add_wide(given, s);

    __m128i r[4];
    if constexpr (K == 8) {
      transpose4(c0, c1, c2, c3, r);  // right, down-right, down, down-left
      for (int i = 0; i < 4; ++i) store4(rc + 8 * (x + i), r[i]);
      transpose4(l, ul, u, ur, r);  // left, up-left, up, up-right
      for (int i = 0; i < 4; ++i) store4(rc + 8 * (x + i) + 4, r[i]);
    } else {
      transpose4(c0, c2, l, u, r);
      for (int i = 0; i < 4; ++i) store4(rc + 4 * (x + i), r[i]);
    }
    // Node{t, 0, distance, tree | parent << 8 (active and unused 0)}, as seed_node().
    const __m128i tree = _mm_or_si128(_mm_and_si128(positive, one), _mm_and_si128(negative, two));
    const __m128i parent = _mm_sub_epi32(no_parent, _mm_and_si128(rooted, two));
    const __m128i flags = _mm_or_si128(tree, _mm_slli_epi32(parent, 8));
    transpose4(t, zero, _mm_and_si128(rooted, one), flags, r);
    for (int i = 0; i < 4; ++i) store4(node + x + i, r[i]);
    const auto bytes = [&](__m128i v) {
      const auto four = static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(v, v), zero)));
      return four;
    };
    const std::uint32_t tree_bytes = bytes(tree);
    const std::uint32_t sink_bytes = bytes(_mm_and_si128(negative, one));
    std::memcpy(trees + x, &tree_bytes, sizeof(tree_bytes));
    std::memcpy(in_sink + x, &sink_bytes, sizeof(sink_bytes));
  }
  std::uint32_t b[4];
  std::memcpy(b, &bits, sizeof(b));
  lanes.bits |= b[0] | b[1] | b[2] | b[3];
  lanes.over = lanes.over || _mm_movemask_epi8(over) != 0;
  lanes.strong += lanes_sum(strong);
  lanes.excess += lanes_sum(excess);
  lanes.given += lanes_sum(given);
  return x;
}
#endif

// Elements [data, data + size) of an array the view does not own (std::span, in C++17).
template <class T>
struct ArrayView {
  T* ptr = nullptr;
  std::size_t count = 0;
  T* data() const { return ptr; }
  std::size_t size() const { return count; }
  T& operator[](std::size_t i) const { return ptr[i]; }
  T* begin() const { return ptr; }
  T* end() const { return ptr + count; }
};

// The solver of one neighbourhood, K = 8 or 4 (see Neighbourhood). Everything
// below is written for either: arc d of node p leads to p + offset[d], and its
// reverse is arc opposite(d) of that node.
template <int K>
struct GridCore {
  static constexpr int kNumDirections = K;
  static constexpr int kNumForward = K / 2;
  static constexpr const int* kDy = Neighbourhood<K>::kDy;
  static constexpr const int* kDx = Neighbourhood<K>::kDx;
  static constexpr int opposite(int d) { return d ^ (K / 2); }
  static_assert(K == 4 || K == 8, "4 or 8 neighbours");

  int height = -1;
  int width = -1;
  int stride = 0;     // width + 2
  int num_nodes = 0;  // (height + 2) * (width + 2)
  int offset[kNumDirections] = {};

  // The arrays the search works on: K residuals per node (arc d of p at K * p + d)
  // and the nodes. They are this solver's own (residual_store, node_store), or, in a
  // strip of a parallel solve, rows of the whole grid's (view_rows).
  ArrayView<std::int32_t> residual;
  ArrayView<Node> nodes;
  std::vector<std::int32_t> residual_store;
  std::vector<Node> node_store;
  // One byte a node, 1 iff the node is in T (kept as the trees change): compute_cut
  // reads the cut from it, a byte a node where the nodes are 16.
  ArrayView<std::uint8_t> in_sink;
  std::vector<std::uint8_t> in_sink_store;
  // The breadth-first order of a push sweep (num_nodes slots).
  std::vector<int> queue;
  std::vector<int> orphans;  // a stack: an orphan's children are repaired right after it
  // The arcs of the augmenting path: `forward` loses the flow, `backward` (its
  // reverse) gains it, and `node` is orphaned if `forward` saturates.
  struct PathArc {
    int node;
    int forward;
    int backward;
  };
  std::vector<PathArc> source_path;
  std::vector<PathArc> sink_path;

  // The levels of the search, per tree (index tree - 1: 0 S, 1 T). to_scan[t] holds,
  // from scan_pos[t] on, the nodes of labels up to top[t] still to scan in the pass
  // under way or the tree's next one; next_level[t] those of label top[t] + 1; later[t][L]
  // those of a label L above that, which only the search that joins a solve's strips
  // has (see solve_in_strips): the strips' trees reach labels far above the levels it
  // starts from, and each of their nodes waits for its level, so that the levels are
  // still grown in breadth-first order. Node::active says which tree's lists hold a
  // node's current entry (a node that changed trees since keeps a stale entry, skipped
  // when popped). A node of a tree that has no entry there has no residual arc in its
  // tree's direction (S: from it, T: into it) to a node outside the tree.
  std::vector<int> to_scan[2];
  std::size_t scan_pos[2] = {0, 0};
  std::vector<int> next_level[2];
  std::vector<std::vector<int>> later[2];
  std::size_t later_count[2] = {0, 0};  // entries in later[t]
  int top[2] = {1, 1};
  int last_grown = 1;  // the tree of the last turn: S and T take turns
  void push_level(int p, const Node& n) {
    const int t = n.tree - 1;
    if (n.distance <= top[t]) {
      to_scan[t].push_back(p);
    } else if (n.distance == top[t] + 1) {
      next_level[t].push_back(p);
    } else {
      push_later(t, p, n.distance);
    }
  }
  // Out of line: only the search that joins strips comes here, and inlined into every
  // push of the growth and adoption loops it cost the strips' own searches 2-4% (1 MP
  // 4-connected segmentation graphs).
  [[gnu::cold, gnu::noinline]] void push_later(int t, int p, int distance) {
    std::vector<std::vector<int>>& lists = later[t];
    const auto at = static_cast<std::size_t>(distance);
    if (lists.size() <= at) lists.resize(at + 1);
    lists[at].push_back(p);
    ++later_count[t];
  }
  std::size_t left_to_scan(int t) const {
    const std::size_t left = to_scan[t].size() - scan_pos[t];
    if (left != 0) return left;
    return next_level[t].empty() ? later_count[t] : next_level[t].size();
  }
  // Tree t's next level: its nodes of label top + 1 are scanned, those of top + 2 wait.
  void next_level_of(int t) {
    ++top[t];
    to_scan[t].swap(next_level[t]);
    next_level[t].clear();
    scan_pos[t] = 0;
    const auto waiting = static_cast<std::size_t>(top[t]) + 1;
    if (later_count[t] != 0 && waiting < later[t].size()) {
      next_level[t].swap(later[t][waiting]);
      later_count[t] -= next_level[t].size();
    }
  }

  // Warm start state: after a completed solve, residual and nodes[].terminal hold
  // a maximum flow of a graph whose terminals were last_terminal (unpadded).
  bool has_flow = false;
  bool keep_flow = true;  // see GridMaxflowSolver::set_keep_flow
  std::vector<std::int32_t> last_terminal;
  // Solvers of the strips of a parallel cold solve, kept for reuse.
  std::vector<std::unique_ptr<GridCore>> strips;

  void prepare(const GridGraphView& graph);
  void reset_search();
  bool reparametrise(const GridGraphView& graph);
  void solve_in_strips(int num_threads, int num_strips, int push_passes, const GridGraphView* graph);
  void view_rows(GridCore& whole, int y0, int y1);
  void remember_terminals(const GridGraphView& graph);
  void start_trees(int push_passes);
  void run_search();
  std::int64_t solve_from_here(const GridGraphView& graph, int push_passes, int num_threads,
                               std::uint8_t* source_side);
  std::int64_t finish_solve(const GridGraphView& graph, std::uint8_t* source_side);
  void push_short_paths();
  std::int64_t push_toward_sinks(bool strong_only, bool seed, bool& skipped);
  // push_toward_sinks() in parts, so that its scan can go row by row: the seeds
  // collect in `orphans` (empty outside adoption) until sweep().
  struct SweepScan {
    bool strong_only = true;
    bool seed = false;
    std::int64_t seed_capacity = 0;
    std::int64_t excess_total = 0;
  };
  void start_scan(SweepScan& scan, bool strong_only, bool seed);
  void scan_row(SweepScan& scan, int y);
  bool strong_sink(int p) const;
  void collect_strong_seeds(SweepScan& scan);
  std::int64_t sweep(const SweepScan& scan, bool& skipped);
  void run_sweeps(int push_passes, const SweepScan* first_scan);
  void short_paths_row(RowRing& ring, int y);
  void short_paths_from(int p, std::uint8_t* const* rows, int column);
  // The flow of a cold solve whose terminals moved by augmentations only (see
  // augmented_only), counted as it goes rather than read off the nodes afterwards:
  // what the terminal pairs carry (given less excess of the rows filled: the sum of
  // min(source, sink) in the pair form, 0 in the net form), what the short paths
  // moved, and what the augmentations sent (each takes its flow out of one source
  // residual).
  std::int64_t paired_flow = 0;
  std::int64_t short_flow = 0;
  std::int64_t augmented_flow = 0;
  void allocate(const GridGraphView& graph);
  // What fill_row() sums over a row for the first push sweep's decision.
  struct FillTotals {
    std::int64_t strong = 0;  // the strong-sink bound (see fill_row)
    std::int64_t excess = 0;  // the source residual
    std::int64_t given = 0;   // the source capacity: the pair form's sources, the net form's excess
  };
  FillTotals fill_row(const GridGraphView& graph, int y, RowRing* seed = nullptr);
  template <bool kPair, bool kSeed>
  FillTotals fill_row_of(const GridGraphView& graph, int y, std::uint8_t* trees);
  std::vector<std::int32_t> zero_row;  // fill_row's n-links off the grid
  void fill_and_start(const GridGraphView& graph, int push_passes);
  void fill_rows_and_start(const GridGraphView& graph, int push_passes);
  std::vector<std::int32_t> label;  // distances of push_toward_sinks()
  void seed_trees();
  // A node with terminal residual becomes a root of its tree, not yet active; one
  // without is left in no tree (it may have been seeded by an earlier scan). Returns
  // the tree, for `seeded`. activate_roots() then activates the roots that can grow.
  std::uint8_t seed_node(int p) {
    Node& n = nodes[static_cast<std::size_t>(p)];
    n.tree = tree_of(n.terminal);
    n.parent = n.terminal != 0 ? kParentTerminal : kNoParent;
    n.distance = n.terminal != 0 ? 1 : 0;
    n.active = 0;
    in_sink[static_cast<std::size_t>(p)] = static_cast<std::uint8_t>(n.tree == kSinkTree);
    return n.tree;
  }
  RowRing seeded;  // the trees of the last rows seeded (activate_roots)
  // The signs of the terminals of the last rows filled or recorded, before their
  // short paths: short_paths_row() looks only at source pixels next to a sink pixel.
  RowRing signs;
  void record_signs(int y);
  void start_seeding();
  void activate_roots(int y);
  void finish_seeding();
  void compute_cut(std::uint8_t* source_side);
  // Whether every terminal residual moved from the graph's terminal by short paths and
  // augmentations only (a cold solve whose push sweeps moved nothing): the flow value
  // is then what they counted (paired_flow, short_flow, augmented_flow).
  bool augmented_only = false;

  // Empties the level lists; every tree starts at level 1 (the roots).
  void clear_levels() {
    for (int t = 0; t < 2; ++t) {
      to_scan[t].clear();
      next_level[t].clear();
      for (std::vector<int>& list : later[t]) list.clear();
      later_count[t] = 0;
      scan_pos[t] = 0;
      top[t] = 1;
    }
    last_grown = 1;
  }
  // Gives a tree node an entry in its tree's level lists, unless it has one.
  void activate(int p) {
    Node& n = nodes[p];
    if (n.active != n.tree) {
      n.active = n.tree;
      push_level(p, n);
    }
  }
  void make_orphan(int p) {
    nodes[p].parent = kParentOrphan;
    orphans.push_back(p);
  }

  template <bool kSourceSide>
  void run_pass();
  void augment(int from, int dir);
  void adopt();
  template <bool kSourceSide>
  void adopt_orphan(int p);
};

}  // namespace

template <int K>
void GridCore<K>::prepare(const GridGraphView& graph) {
  allocate(graph);
  for (int y = 0; y < graph.height; ++y) fill_row(graph, y);
}

template <int K>
void GridCore<K>::allocate(const GridGraphView& graph) {
  const int h = graph.height;
  const int w = graph.width;
  if (h != height || w != width) {
    const std::int64_t padded = (std::int64_t{h} + 2) * (std::int64_t{w} + 2);
    if (padded * kNumDirections > std::numeric_limits<int>::max()) {
      throw std::length_error("GridMaxflowSolver: a " + std::to_string(h) + " x " +
                              std::to_string(w) + " grid is too large");
    }
    // Mark the sizes unknown until the buffers fit them, in case allocation throws.
    height = width = -1;
    stride = w + 2;
    num_nodes = static_cast<int>(padded);
    for (int d = 0; d < kNumDirections; ++d) offset[d] = kDy[d] * stride + kDx[d];
    // The padding keeps these zero residuals and cleared nodes for good: no arc
    // leads to or from it, so it never joins a tree. fill_row() rewrites every
    // node inside the grid whole, so the search state needs no other reset.
    residual_store.assign(static_cast<std::size_t>(num_nodes) * kNumDirections, 0);
    node_store.assign(static_cast<std::size_t>(num_nodes), kClearedNode);
    in_sink_store.assign(static_cast<std::size_t>(num_nodes), 0);
    queue.resize(static_cast<std::size_t>(num_nodes));
    height = h;
    width = w;
  }
  residual = {residual_store.data(), residual_store.size()};
  nodes = {node_store.data(), node_store.size()};
  in_sink = {in_sink_store.data(), in_sink_store.size()};

  has_flow = false;
  augmented_only = false;
  short_flow = augmented_flow = 0;
  clear_levels();
  orphans.clear();
}

// Writes row y of `graph` into the buffers (after allocate()): the residuals of the
// arcs of its pixels, checking the n-links they own (in the pair form also the
// terminals and the node sums, whose other n-links, owned by earlier pixels, are
// checked already), and their nodes, cleared. It reads nothing of later rows, so a
// row that throws has not been used.
//
// Returns the row's strong-sink bound: the sum of the sink residuals of its pixels
// whose sink residual is at least their inflow (the residuals of the arcs into them,
// here the capacities of their n-links, which the fill sums anyway). The short paths
// lower a sink pixel's sink residual and its inflow by the same amount, so a pixel is
// such a "strong" sink after them iff it was one here, with no more sink residual:
// the bound is at least the seed capacity the first push sweep's scan finds, and
// decides most skips without that scan's K arc loads a sink pixel (see
// fill_rows_and_start).
//
// With `seed`, each node is seeded as a root of the tree its terminal's sign says
// (seed_node), its tree byte written to the ring's row y; otherwise it is left in no
// tree.
template <int K>
typename GridCore<K>::FillTotals GridCore<K>::fill_row(const GridGraphView& graph, int y, RowRing* seed) {
  std::uint8_t* const trees = seed != nullptr ? seed->row(y) + 1 : nullptr;
  if (graph.terminal != nullptr) {
    return seed != nullptr ? fill_row_of<false, true>(graph, y, trees) : fill_row_of<false, false>(graph, y, trees);
  }
  return seed != nullptr ? fill_row_of<true, true>(graph, y, trees) : fill_row_of<true, false>(graph, y, trees);
}

template <int K>
template <bool kPair, bool kSeed>
typename GridCore<K>::FillTotals GridCore<K>::fill_row_of(const GridGraphView& graph, int y, std::uint8_t* trees) {
  const int h = graph.height;
  const int w = graph.width;
  const std::size_t row = static_cast<std::size_t>(y) * static_cast<std::size_t>(w);
  // Rows of n-links off the grid read as this row of zeros, so that the loop over the
  // row's inner pixels has no test; the first and last pixel mask their left and right.
  if (zero_row.size() < static_cast<std::size_t>(w) + 2) zero_row.assign(static_cast<std::size_t>(w) + 2, 0);
  const std::int32_t* const zeros = zero_row.data() + 1;  // zeros[-1 .. w]
  const bool has_down = y + 1 < h;
  const bool has_up = y > 0;
  const std::int32_t* const right = graph.nlink[kRight] + row;
  const std::int32_t* const down = has_down ? graph.nlink[kDown] + row : zeros;
  const std::int32_t* const up = has_up ? graph.nlink[kDown] + row - w : zeros;
  const std::int32_t* down_right = zeros;
  const std::int32_t* down_left = zeros;
  const std::int32_t* up_left = zeros;   // the n-links of row y - 1 to this row: up-left at x - 1,
  const std::int32_t* up_right = zeros;  // up-right at x + 1
  if constexpr (K == 8) {
    if (has_down) {
      down_right = graph.nlink[kDownRight] + row;
      down_left = graph.nlink[kDownLeft] + row;
    }
    if (has_up) {
      up_left = graph.nlink[kDownRight] + row - w;
      up_right = graph.nlink[kDownLeft] + row - w;
    }
  }
  const std::int32_t* const terminal = kPair ? nullptr : graph.terminal + row;
  const std::int32_t* const source = kPair ? graph.source + row : nullptr;
  const std::int32_t* const sink = kPair ? graph.sink + row : nullptr;
  std::int32_t* const rc = residual.data() + static_cast<std::size_t>(kNumDirections) * ((y + 1) * stride + 1);
  Node* const node = nodes.data() + (y + 1) * stride + 1;
  std::uint8_t* const sink_bytes = in_sink.data() + (y + 1) * stride + 1;
  const std::int64_t max_node_sum = graph.max_node_sum;
  const auto bits = [](std::int32_t v) { return static_cast<std::uint32_t>(v); };
  // What a pixel adds to the row's FillSums. The loop stays free of branches. The sums
  // live in the loop, not in the lambda's captures: a byte store through `trees` may
  // alias anything whose address was taken, and would keep them in memory.
  const auto pixel = [=](int x, bool left, bool right_in) -> FillSums {
    std::uint32_t any_bits = 0;
    bool over = false;
    // Forward arcs come from this pixel's n-links, which are checked here; the
    // backward arcs read n-links of earlier pixels, checked already.
    std::int32_t* const r = rc + kNumDirections * x;
    const std::int32_t c0 = right_in ? right[x] : 0;
    const std::int32_t c2 = down[x];
    const std::int32_t l = left ? right[x - 1] : 0;
    const std::int32_t u = up[x];
    std::int64_t arcs = std::int64_t{c0} + c2 + l + u;
    if constexpr (K == 8) {
      const std::int32_t c1 = right_in ? down_right[x] : 0;
      const std::int32_t c3 = left ? down_left[x] : 0;
      const std::int32_t ul = left ? up_left[x - 1] : 0;
      const std::int32_t ur = right_in ? up_right[x + 1] : 0;
      any_bits |= bits(c0) | bits(c1) | bits(c2) | bits(c3);
      arcs += std::int64_t{c1} + c3 + ul + ur;
      r[0] = c0;
      r[1] = c1;
      r[2] = c2;
      r[3] = c3;
      r[4] = l;
      r[5] = ul;
      r[6] = u;
      r[7] = ur;
    } else {
      // Only graphs whose diagonal n-links in the grid are all zero come here.
      any_bits |= bits(c0) | bits(c2);
      r[0] = c0;
      r[1] = c2;
      r[2] = l;
      r[3] = u;
    }
    std::int32_t t;
    std::int64_t given = 0;
    if constexpr (kPair) {
      const std::int32_t s = source[x];
      given = s;
      const std::int32_t k = sink[x];
      any_bits |= bits(s) | bits(k);
      // Every value is below 2^31 in magnitude, so the int64 sum cannot overflow,
      // checked or not.
      over |= std::int64_t{s} + k + arcs > max_node_sum;
      // Unsigned: values the row's check rejects may wrap, and are never used.
      t = static_cast<std::int32_t>(bits(s) - bits(k));
    } else {
      t = terminal[x];
      given = std::max(t, 0);
    }
    if constexpr (kSeed) {
      const std::uint8_t tree = tree_of(t);
      node[x] = Node{t, 0, t != 0 ? 1 : 0, tree, t != 0 ? kParentTerminal : kNoParent, 0, 0};
      trees[x] = tree;
      sink_bytes[x] = static_cast<std::uint8_t>(t < 0);
    } else {
      node[x] = Node{t, 0, 0, kFree, kNoParent, 0, 0};
      sink_bytes[x] = 0;
    }
    const std::int64_t sink_residual = -std::int64_t{t};
    return {any_bits, over, sink_residual >= arcs ? std::max<std::int64_t>(sink_residual, 0) : 0,
            std::max<std::int64_t>(t, 0), given};
  };
  std::uint32_t any_bits = 0;
  bool over = false;
  FillTotals totals;
  const auto add = [&](const FillSums& sums) {
    any_bits |= sums.bits;
    over |= sums.over;
    totals.strong += sums.strong;
    totals.excess += sums.excess;
    totals.given += sums.given;
  };
  add(pixel(0, false, w > 1));
  int x = 1;
#if defined(__SSE2__)
  if constexpr (kPair && kSeed) {
    if (max_node_sum >= 0 && max_node_sum < (std::int64_t{1} << 31)) {
      const FillRowInputs in = {right, down, up, down_right, down_left, up_left, up_right, source, sink};
      FillSums lanes;
      x = fill_inner_pixels<K>(in, w, static_cast<std::int32_t>(max_node_sum), rc, node, trees, sink_bytes, lanes);
      add(lanes);
    }
  }
#endif
  for (; x + 1 < w; ++x) add(pixel(x, true, true));
  if (w > 1) add(pixel(w - 1, true, false));
  if (out_of_range(any_bits) || over) throw_bad_row(graph, y);
  return totals;
}

// Clears the search trees and their level lists; keeps the residual capacities
// (terminal residuals included).
template <int K>
void GridCore<K>::reset_search() {
  for (Node& n : nodes) {
    const std::int32_t t = n.terminal;
    n = kClearedNode;
    n.terminal = t;
  }
  std::fill(in_sink.begin(), in_sink.end(), std::uint8_t{0});
  short_flow = augmented_flow = 0;
  clear_levels();
  orphans.clear();
}

// Warm start: if `graph` has the size and the n-links of the graph whose maximum
// flow the buffers hold, keeps that flow on the n-links and moves each terminal
// residual by the change of its terminal, then clears the search state. Returns
// false (buffers then in an unspecified state; prepare() starts afresh) if the
// size or an n-link differs or a new residual leaves int32.
template <int K>
bool GridCore<K>::reparametrise(const GridGraphView& graph) {
  if (!has_flow || graph.terminal == nullptr || graph.height != height || graph.width != width) return false;
  has_flow = false;
  augmented_only = false;
  const int h = height;
  const int w = width;
  std::int32_t* const rc = residual.data();
  Node* const node = nodes.data();
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int i = y * w + x;
      const int p = (y + 1) * stride + (x + 1);
      const std::int32_t* const r = rc + kNumDirections * p;
      for (int d = 0; d < kNumForward; ++d) {
        // The two arcs of an n-link of capacity c keep residuals adding up to 2c;
        // arcs to the padding stay 0 and have c = 0. (K = 4 solves only graphs
        // whose diagonals are zero, so it checks the other two n-links.)
        const int ny = y + kDy[d];
        const int nx = x + kDx[d];
        const bool in_grid = ny < h && nx >= 0 && nx < w;
        const std::int64_t c = in_grid ? graph.nlink[Neighbourhood<K>::kNlink[d]][i] : 0;
        const std::int64_t sum = std::int64_t{r[d]} + rc[kNumDirections * (p + offset[d]) + opposite(d)];
        if (sum != 2 * c) return false;
      }
      const std::int64_t t = std::int64_t{node[p].terminal} + graph.terminal[i] -
                             last_terminal[static_cast<std::size_t>(i)];
      if (t < std::numeric_limits<std::int32_t>::min() || t > std::numeric_limits<std::int32_t>::max()) {
        return false;
      }
      node[p].terminal = static_cast<std::int32_t>(t);
    }
  }
  reset_search();
  return true;
}

template <int K>
void GridCore<K>::remember_terminals(const GridGraphView& graph) {
  if (!keep_flow || graph.terminal == nullptr) {
    has_flow = false;
    return;
  }
  const std::size_t n = static_cast<std::size_t>(height) * static_cast<std::size_t>(width);
  last_terminal.assign(graph.terminal, graph.terminal + n);
  has_flow = true;
}

// Parallel phase of a solve on num_threads threads (or, on one, the strips' phase of
// a serial solve in strips: see set_serial_strips). The rows are cut into num_strips
// horizontal strips (at most one per 2 rows) with one separator row between
// neighbouring strips, and each strip is solved to a maximum flow of its own
// residual graph, the arcs to the separators closed, in place: the strip's solver
// (view_rows) works on the rows of this solver's arrays. Together the strips' flows
// are a flow of the whole graph, and their search trees (S and T forests inside the
// strips) valid trees of it; the separators then join the grid, their nodes seeded
// as roots, and the search that finishes the solve (run_search) starts from the
// nodes of the separators and the rows beside them, the only places where a strip's
// trees can be incomplete.
//
// A strip reads the nodes of the separators next to it (a neighbour's state before
// the arc to it, in growth and adoption) but never writes them: every arc between
// it and a separator is closed, in both directions, while the strips run, and a
// separator node is in no tree. So no two strips share a node they write, and no
// strip reads a node another one writes. The strips work in place because copies
// in and out of strip buffers cost, on 1 MP segmentation graphs, as much as the
// strips' whole search.
//
// graph: a cold solve (the strips fill their own rows, in parallel, from the graph,
// and this solver only the separators); null: a warm solve, from the residual graph
// the buffers hold (after reparametrise()). The buffers fit the graph (allocate()).
template <int K>
void GridCore<K>::solve_in_strips(int num_threads, int num_strips, int push_passes, const GridGraphView* graph) {
  const int h = height;
  const int w = width;
  // Every strip has at least one row (the first) or two (a separator and a row).
  const int leaves = std::max(1, std::min(num_strips, h / 2));
  // Strip s: rows [first_row[s] + (s > 0), first_row[s + 1]); separator s: row first_row[s], 0 < s < leaves.
  std::vector<int> first_row(static_cast<std::size_t>(leaves) + 1);
  for (int s = 0; s <= leaves; ++s) {
    first_row[static_cast<std::size_t>(s)] = static_cast<int>(std::int64_t{h} * s / leaves);
  }
  const int separators = leaves - 1;
  // The arcs of the separators' rows and of the rows beside them, as they are to be
  // once the strips are done; the arcs between a separator and a strip are closed
  // meanwhile.
  const std::size_t row_arcs = static_cast<std::size_t>(stride) * kNumDirections;
  std::vector<std::int32_t> kept(static_cast<std::size_t>(separators) * 3 * row_arcs);
  const auto arcs_of = [&](int y) { return residual.data() + static_cast<std::size_t>(y + 1) * row_arcs; };
  const auto kept_of = [&](int s, int row) {
    return kept.data() + (static_cast<std::size_t>(s - 1) * 3 + static_cast<std::size_t>(row)) * row_arcs;
  };
  // Arc d of a node on the row `row` - 1 rows from a separator (0: above, 1: on it,
  // 2: below) leads to or from the separator's row.
  const auto crosses = [](int row, int d) { return row == 1 ? kDy[d] != 0 : kDy[d] == (row == 0 ? 1 : -1); };
  const auto fail = [&](const std::exception_ptr& e) {
    // A graph that a check refused: the first error in the order a serial solve
    // finds it, by the serial fill (which checks everything).
    if (graph != nullptr) {
      try {
        std::rethrow_exception(e);
      } catch (const std::invalid_argument&) {
        prepare(*graph);
      }
    }
    std::rethrow_exception(e);
  };
  // What the separators' terminal pairs carry (see paired_flow), which no strip counts.
  std::int64_t separators_paired = 0;
  try {
    for (int s = 1; s <= separators; ++s) {
      const int y = first_row[static_cast<std::size_t>(s)];
      if (graph != nullptr) {
        check_row(*graph, y - 1);
        check_row(*graph, y + 1);
        const FillTotals row = fill_row(*graph, y);
        separators_paired += row.given - row.excess;
      }
      std::copy_n(arcs_of(y - 1), 3 * row_arcs, kept_of(s, 0));
      if (graph != nullptr) {
        // The strips' rows are filled later: their arcs to the separator have the
        // capacity of the n-link, as the separator's arcs to them have now.
        for (int row = 0; row < 3; row += 2) {
          std::int32_t* const to = kept_of(s, row);
          const std::int32_t* const from = kept_of(s, 1);
          for (int x = 1; x <= w; ++x) {
            for (int d = 0; d < kNumDirections; ++d) {
              if (crosses(row, d)) to[kNumDirections * x + d] = from[kNumDirections * (x + kDx[d]) + opposite(d)];
            }
          }
        }
      }
      for (int row = 0; row < 3; ++row) {
        std::int32_t* const r = arcs_of(y - 1 + row);
        for (int x = 1; x <= w; ++x) {
          for (int d = 0; d < kNumDirections; ++d) {
            if (crosses(row, d)) r[kNumDirections * x + d] = 0;
          }
        }
      }
    }
  } catch (...) {
    fail(std::current_exception());
  }

  while (static_cast<int>(strips.size()) < leaves) strips.push_back(std::make_unique<GridCore>());
  std::vector<std::uint8_t> augmented(static_cast<std::size_t>(leaves), 0);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(leaves));
  const bool nested = omp_in_parallel() != 0;
#pragma omp parallel for num_threads(num_threads) schedule(dynamic, 1) if (!nested && num_threads > 1)
  for (int i = 0; i < leaves; ++i) {
    // Outer strips first (0, last, 1, last - 1, ...): on 1 MP segmentation graphs the
    // top and bottom strips, far from the object, cost up to 3 times the inner ones,
    // and handed out last they left one thread alone (4 strips on 2 threads: 1.72x
    // one thread in this order, 1.94x outer first).
    const int s = i % 2 == 0 ? i / 2 : leaves - 1 - i / 2;
    try {
      const int y0 = first_row[static_cast<std::size_t>(s)] + (s > 0 ? 1 : 0);
      const int y1 = first_row[static_cast<std::size_t>(s) + 1];
      GridCore& strip = *strips[static_cast<std::size_t>(s)];
      strip.view_rows(*this, y0, y1);
      if (graph != nullptr) {
        strip.fill_rows_and_start(rows_of(*graph, y0, y1), push_passes);
      } else {
        strip.start_trees(push_passes);
      }
      strip.run_search();
      augmented[static_cast<std::size_t>(s)] = strip.augmented_only ? 1 : 0;
    } catch (...) {
      errors[static_cast<std::size_t>(s)] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : errors) {
    if (e) fail(e);
  }

  // The separators join: their arcs open, their nodes roots, and every tree node on
  // them or beside them scanned again (it may have an arc to a free node or the other
  // tree now). Both trees start from level 1 and take each listed node at its own
  // label's level (push_level), so labels still rise from every node to its parent and
  // the levels still grow in breadth-first order. (Starting both at the largest strip's
  // top + 1 instead scans every listed node in one pass, in list order, and on graphs
  // with deep trees the search then costs several times the strips: bench/RESULTS.md,
  // issue 36, session 44.)
  clear_levels();
  orphans.clear();
  augmented_only = graph != nullptr && std::find(augmented.begin(), augmented.end(), 0) == augmented.end();
  paired_flow = separators_paired;
  short_flow = augmented_flow = 0;
  for (int s = 0; s < leaves; ++s) {
    const GridCore& strip = *strips[static_cast<std::size_t>(s)];
    paired_flow += strip.paired_flow;
    short_flow += strip.short_flow;
    augmented_flow += strip.augmented_flow;
  }
  for (int s = 1; s <= separators; ++s) {
    const int y = first_row[static_cast<std::size_t>(s)];
    for (int row = 0; row < 3; ++row) {
      std::int32_t* const r = arcs_of(y - 1 + row);
      const std::int32_t* const from = kept_of(s, row);
      for (int x = 1; x <= w; ++x) {
        for (int d = 0; d < kNumDirections; ++d) {
          if (crosses(row, d)) r[kNumDirections * x + d] = from[kNumDirections * x + d];
        }
      }
    }
    for (int x = 1; x <= w; ++x) seed_node((y + 1) * stride + x);
  }
  for (int s = 1; s <= separators; ++s) {
    const int y = first_row[static_cast<std::size_t>(s)];
    for (int p = y * stride + 1; p < (y + 3) * stride - 1; ++p) {
      if (nodes[static_cast<std::size_t>(p)].tree != kFree) activate(p);
    }
  }
  // A strip's search ends when its T closes; the S nodes it had left to scan keep
  // their entries, now in this solver's lists.
  for (int s = 0; s < leaves; ++s) {
    GridCore& strip = *strips[static_cast<std::size_t>(s)];
    const int first = (first_row[static_cast<std::size_t>(s)] + (s > 0 ? 1 : 0)) * stride;
    for (int t = 0; t < 2; ++t) {
      const auto carry = [&](const std::vector<int>& list, std::size_t from) {
        for (std::size_t k = from; k < list.size(); ++k) {
          const int p = list[k] + first;
          Node& n = nodes[static_cast<std::size_t>(p)];
          if (n.active != t + 1) continue;  // a stale entry, or one carried already
          n.active = n.tree;
          if (n.tree != kFree) push_level(p, n);
        }
      };
      carry(strip.to_scan[t], strip.scan_pos[t]);
      carry(strip.next_level[t], 0);
    }
  }
}

// Makes this solver the strip of rows [y0, y1) of `whole`, in place: its arrays are
// those rows of whole's, between the rows above and below (the padding rows of this
// view, which it must find closed: see solve_in_strips), and its search is cleared.
template <int K>
void GridCore<K>::view_rows(GridCore& whole, int y0, int y1) {
  height = y1 - y0;
  width = whole.width;
  stride = whole.stride;
  num_nodes = (height + 2) * stride;
  for (int d = 0; d < kNumDirections; ++d) offset[d] = kDy[d] * stride + kDx[d];
  const std::size_t first = static_cast<std::size_t>(y0) * static_cast<std::size_t>(stride);
  nodes = {whole.nodes.data() + first, static_cast<std::size_t>(num_nodes)};
  in_sink = {whole.in_sink.data() + first, static_cast<std::size_t>(num_nodes)};
  residual = {whole.residual.data() + first * kNumDirections, static_cast<std::size_t>(num_nodes) * kNumDirections};
  queue.resize(static_cast<std::size_t>(num_nodes));
  clear_levels();
  orphans.clear();
  has_flow = false;
  augmented_only = false;
  short_flow = augmented_flow = 0;
}

// Sends flow along the paths source -> p -> q -> sink of one n-link arc, pixel by
// pixel: cheap, and in GrabCut graphs it carries much of the maximum flow. The
// search trees are seeded afterwards from the terminal residuals that remain.
template <int K>
void GridCore<K>::push_short_paths() {
  signs.reset(width);
  if (height > 0) record_signs(0);
  for (int y = 0; y < height; ++y) {
    if (y + 1 < height) {
      record_signs(y + 1);
    } else {
      signs.clear(y + 1);
    }
    short_paths_row(signs, y);
  }
}

template <int K>
void GridCore<K>::record_signs(int y) {
  const Node* const row = nodes.data() + (y + 1) * stride + 1;
  std::uint8_t* const out = signs.row(y) + 1;
  for (int x = 0; x < width; ++x) out[x] = tree_of(row[x].terminal);
}

// push_short_paths() for the pixels of row y: it changes the residuals of rows
// y - 1 .. y + 1 only. `ring` holds the tree bytes of rows y - 1 .. y + 1 as their
// terminals' signs were before their short paths (or later): a terminal only moves
// toward zero here, so a pixel that can push now was a source pixel with a sink pixel
// beside it then, and only such pixels are looked at (on segmentation graphs a few
// percent), 8 at a time. A terminal that reaches zero has its byte cleared.
template <int K>
void GridCore<K>::short_paths_row(RowRing& ring, int y) {
  std::uint8_t* const rows[3] = {ring.row(y - 1), ring.row(y), ring.row(y + 1)};
  const std::uint8_t* const up = rows[0];
  const std::uint8_t* const mid = rows[1];
  const std::uint8_t* const down = rows[2];
  const auto word = ring_word;
  for (int x0 = 0; x0 < width; x0 += 8) {
    const int c = x0 + 1;
    std::uint64_t around = word(mid + c - 1) | word(mid + c + 1) | word(up + c) | word(down + c);
    if constexpr (K == 8) {
      around |= word(up + c - 1) | word(up + c + 1) | word(down + c - 1) | word(down + c + 1);
    }
    // Bit 0 of a byte: a source pixel (1); bit 1 of `around`: a sink pixel (2) beside it.
    const std::uint64_t may_push = word(mid + c) & (around >> 1) & kLowBytes;
    if (may_push == 0) continue;
    for_each_set_byte(may_push, [&](int i) { short_paths_from((y + 1) * stride + c + i, rows, c + i); });
  }
}

// The short paths from pixel p, in direction order; rows: the ring's rows of p's row
// and the two beside it, p at `column`. A node whose terminal reaches zero is left in
// no tree (as seed_node() would leave it) and its byte cleared: the fused fill seeds
// the roots before their short paths (fill_rows_and_start); elsewhere the nodes are
// in no tree already.
template <int K>
void GridCore<K>::short_paths_from(int p, std::uint8_t* const* rows, int column) {
  Node* const node = nodes.data();
  std::int32_t* const rc = residual.data();
  Node& np = node[p];
  std::int32_t* const rp = rc + kNumDirections * p;
  const auto unroot = [&](int at, std::uint8_t& tree) {
    Node& n = node[at];
    n.tree = kFree;
    n.parent = kNoParent;
    n.distance = 0;
    in_sink[static_cast<std::size_t>(at)] = 0;
    tree = kFree;
  };
  for (int d = 0; d < kNumDirections && np.terminal > 0; ++d) {
    if (rp[d] == 0) continue;
    const int q = p + offset[d];
    Node& nq = node[q];
    if (nq.terminal >= 0) continue;
    std::int32_t f = rp[d];
    if (np.terminal < f) f = np.terminal;
    if (nq.terminal > -std::int64_t{f}) f = -nq.terminal;  // -terminal may be 2^31
    rp[d] -= f;
    rc[kNumDirections * q + opposite(d)] += f;
    np.terminal -= f;
    nq.terminal += f;
    short_flow += f;
    if (nq.terminal == 0) unroot(q, rows[1 + kDy[d]][column + kDx[d]]);
  }
  if (np.terminal == 0) unroot(p, rows[1][column]);
}

// Seeds row by row; a row's roots are activated once the rows around it are seeded.
template <int K>
void GridCore<K>::seed_trees() {
  start_seeding();
  for (int y = 0; y < height; ++y) {
    std::uint8_t* const trees = seeded.row(y);
    for (int x = 0; x < width; ++x) trees[x + 1] = seed_node((y + 1) * stride + (x + 1));
    if (y >= 1) activate_roots(y - 1);
  }
  finish_seeding();
}

template <int K>
void GridCore<K>::start_seeding() {
  clear_levels();
  seeded.reset(width);
}

// The last row's roots, once every row is seeded.
template <int K>
void GridCore<K>::finish_seeding() {
  seeded.clear(height);  // the padding row below
  activate_roots(height - 1);
}

// Activates, in raster order, the roots of row y (seed_node) that have a residual arc
// in their tree's direction (S: from the root, T: into it) to a node not in their
// tree, the seeded rows y - 1 .. y + 1 and their residuals final. The others (on
// segmentation graphs over 90% of all nodes: neighbours mostly share the sign of
// their terminal) could only be popped and found unable to grow. Leaving them
// passive keeps the search's invariant, that a tree node with such an arc to a free
// node or the other tree is active: their tree arcs lead to roots of their own
// tree, and a neighbour that later leaves the tree reactivates them (adopt_orphan).
template <int K>
void GridCore<K>::activate_roots(int y) {
  const std::int32_t* const rc = residual.data();
  const std::uint8_t* const up = seeded.row(y - 1);
  const std::uint8_t* const mid = seeded.row(y);
  const std::uint8_t* const down = seeded.row(y + 1);
  const std::uint8_t* const rows[3] = {up, mid, down};
  const auto word = ring_word;
  for (int x0 = 0; x0 < width; x0 += 8) {
    // Most roots have only roots of their tree around them: their arcs need no look.
    // Tree bytes are 0, 1 or 2, so bit 0 of (v | v >> 1) says a byte of v is nonzero.
    const int c = x0 + 1;
    const std::uint64_t t = word(mid + c);
    std::uint64_t differs =
        (t ^ word(mid + c - 1)) | (t ^ word(mid + c + 1)) | (t ^ word(up + c)) | (t ^ word(down + c));
    if constexpr (K == 8) {
      differs |= (t ^ word(up + c - 1)) | (t ^ word(up + c + 1)) | (t ^ word(down + c - 1)) |
                 (t ^ word(down + c + 1));
    }
    const std::uint64_t may_grow = (differs | differs >> 1) & (t | t >> 1) & kLowBytes;
    if (may_grow == 0) continue;
    for_each_set_byte(may_grow, [&](int i) {
      const int p = (y + 1) * stride + (c + i);
      // The trees from the ring's bytes, which are the nodes' (a few lines, where the
      // nodes of the rows above and below are far).
      const std::uint8_t tree = mid[c + i];
      const std::int32_t* const rp = rc + kNumDirections * p;
      bool grows = false;
      for (int d = 0; d < kNumDirections; ++d) {
        const int q = p + offset[d];
        const std::int32_t r = tree == kSourceTree ? rp[d] : rc[kNumDirections * q + opposite(d)];
        grows |= (r != 0) & (rows[1 + kDy[d]][c + i + kDx[d]] != tree);
      }
      if (grows) activate(p);
    });
  }
}

// One sweep of push-relabel style pushes. A breadth-first search backward from
// the pixels with a sink residual (terminal < 0; with strong_only, only those
// whose sink residual is at least the sum of their incoming residuals, so that no
// inflow can use it up) over residual arcs labels every pixel that can reach one
// with its distance; then, in order of decreasing
// distance, each pixel with a source residual (terminal > 0) pushes it along
// residual arcs to neighbours one step closer. A push of f along arc p -> q moves
// f of terminal residual from p to q: that is a flow in a graph that differs from
// this one only by equal capacities added to both terminal edges of some pixels
// (p's source edge carries flow that now goes on to q rather than to p's sink
// edge), which adds a constant to every cut and changes no minimum cut. So the
// search trees can start from the state it leaves. Returns the flow moved.
//
// A sweep costs a few passes over the whole grid whatever it moves, and it pays
// only where the seeds can take much of the source residual: in GrabCut graphs the
// strong sinks (the hard background) can take from 0.8 to hundreds of times all of
// it. Where they can take less than kMinSeedShare of it (on torchmaxflow-style
// segmentation graphs at 1 MP: 0 to 11 strong sinks, able to take under 1/10,000
// of it), the sweep would only carry residual across the grid toward a few pixels
// that cannot absorb it (measured: two sweeps cost more than twice the whole search
// they saved), so it is skipped and returns 0.
//
// With `seed`, the scan also seeds the search trees from the terminals as it reads
// them (seed_trees), for the case where the sweep is then skipped (`skipped` set,
// nothing moved); a sweep that runs leaves the trees to seed_trees() afterwards.
template <int K>
std::int64_t GridCore<K>::push_toward_sinks(bool strong_only, bool seed, bool& skipped) {
  SweepScan scan;
  start_scan(scan, strong_only, seed);
  for (int y = 0; y < height; ++y) scan_row(scan, y);
  return sweep(scan, skipped);
}

template <int K>
void GridCore<K>::start_scan(SweepScan& scan, bool strong_only, bool seed) {
  scan = SweepScan{};
  scan.strong_only = strong_only;
  scan.seed = seed;
  orphans.clear();  // the seeds' list until sweep()
  if (seed) start_seeding();
}

// The scan of push_toward_sinks() over row y: its seeds, their capacity, the source
// residual, and (scan.seed) the trees' roots, activating those of row y - 1 (whose
// neighbours are seeded now; sweep() activates the last row's). It reads the
// residuals of rows y - 2 .. y + 1, which must be final.
template <int K>
void GridCore<K>::scan_row(SweepScan& scan, int y) {
  Node* const node = nodes.data();
  std::vector<int>& seeds = orphans;
  std::uint8_t* const trees = scan.seed ? seeded.row(y) : nullptr;
  for (int x = 0; x < width; ++x) {
    const int p = (y + 1) * stride + (x + 1);
    const std::int32_t t = node[p].terminal;
    if (scan.seed) trees[x + 1] = seed_node(p);
    if (t > 0) scan.excess_total += t;
    if (t < 0) {
      bool is_seed = !scan.strong_only;
      if (scan.strong_only) is_seed = strong_sink(p);
      if (is_seed) {
        scan.seed_capacity -= t;
        seeds.push_back(p);
      }
    }
  }
  if (scan.seed && y >= 1) activate_roots(y - 1);
}

// A sink pixel whose sink residual no inflow can use up: it stays a sink for good.
template <int K>
bool GridCore<K>::strong_sink(int p) const {
  const std::int32_t* const rc = residual.data();
  std::int64_t inflow = 0;
  for (int d = 0; d < kNumDirections; ++d) inflow += rc[kNumDirections * (p + offset[d]) + opposite(d)];
  return -std::int64_t{nodes[p].terminal} >= inflow;
}

// The seeds and seed capacity of a strong-only scan, in the order scan_row() finds
// them, for a scan that had left them out (fill_rows_and_start).
template <int K>
void GridCore<K>::collect_strong_seeds(SweepScan& scan) {
  std::vector<int>& seeds = orphans;
  for (int y = 0; y < height; ++y) {
    for (int p = (y + 1) * stride + 1; p <= (y + 1) * stride + width; ++p) {
      const std::int32_t t = nodes[p].terminal;
      if (t < 0 && strong_sink(p)) {
        scan.seed_capacity -= t;
        seeds.push_back(p);
      }
    }
  }
}

// The rest of push_toward_sinks() once every row is scanned.
template <int K>
std::int64_t GridCore<K>::sweep(const SweepScan& scan, bool& skipped) {
  Node* const node = nodes.data();
  std::int32_t* const rc = residual.data();
  std::vector<int>& seeds = orphans;
  if (!sweep_pays(scan.seed_capacity, scan.excess_total)) {
    seeds.clear();
    if (scan.seed) finish_seeding();  // the scan activated the rows above
    skipped = true;
    return 0;
  }
  skipped = false;
  // The queue is the breadth-first order below; the trees are seeded afterwards.
  clear_levels();
  int* const order = queue.data();
  label.assign(static_cast<std::size_t>(num_nodes), -1);
  std::int32_t* const lab = label.data();
  int count = 0;
  for (int p : seeds) {
    lab[p] = 0;
    order[count++] = p;
  }
  seeds.clear();
  for (int k = 0; k < count; ++k) {
    const int q = order[k];
    const std::int32_t next = lab[q] + 1;
    for (int d = 0; d < kNumDirections; ++d) {
      const int p = q + offset[d];  // arc p -> q is arc opposite(d) of p
      if (lab[p] < 0 && rc[kNumDirections * p + opposite(d)] != 0) {
        lab[p] = next;
        order[count++] = p;
      }
    }
  }
  std::int64_t moved = 0;
  for (int k = count - 1; k >= 0; --k) {
    const int p = order[k];
    std::int32_t excess = node[p].terminal;
    if (excess <= 0 || lab[p] == 0) continue;  // a sink that filled up waits for the trees
    const std::int32_t want = lab[p] - 1;
    std::int32_t* const rp = rc + kNumDirections * p;
    for (int d = 0; d < kNumDirections && excess > 0; ++d) {  // (d order: deterministic)
      const int q = p + offset[d];
      if (lab[q] != want || rp[d] == 0) continue;
      std::int32_t f = rp[d] < excess ? rp[d] : excess;
      const std::int32_t room = std::numeric_limits<std::int32_t>::max() - std::max(node[q].terminal, 0);
      if (f > room) f = room;
      rp[d] -= f;
      rc[kNumDirections * q + opposite(d)] += f;
      excess -= f;
      node[q].terminal += f;
      moved += f;
    }
    node[p].terminal = excess;
  }
  return moved;
}

// The start of a search from a cleared one: short paths and push sweeps move what
// flow they can cheaply, then every node with terminal residual roots a tree.
template <int K>
void GridCore<K>::start_trees(int push_passes) {
  push_short_paths();
  run_sweeps(push_passes, nullptr);
}

// The push sweeps, then the trees. The first sweep's scan seeds the trees as it
// goes: if it skips the sweep, the terminals are final and the trees ready, and one
// pass over the grid is saved. first_scan: that scan, already made, the trees seeded
// and their roots activated (fill_rows_and_start).
template <int K>
void GridCore<K>::run_sweeps(int push_passes, const SweepScan* first_scan) {
  for (int pass = 0; pass < push_passes; ++pass) {
    bool skipped = false;
    std::int64_t moved = 0;
    if (pass == 0 && first_scan != nullptr) {
      moved = sweep(*first_scan, skipped);
    } else {
      moved = push_toward_sinks(pass < kStrongPasses, /*seed=*/pass == 0, skipped);
    }
    if (skipped && pass == 0) return;
    if (moved != 0) augmented_only = false;
    if (skipped || moved == 0) break;
  }
  seed_trees();
}

// prepare() and start_trees(push_passes) of a serial cold solve in one pass over the
// grid rather than three: row y is filled and its nodes seeded as roots, then the
// short paths of row y - 1 are pushed (their arcs reach row y, now filled), then the
// roots of row y - 3 are activated (the short paths of rows up to y - 1 have changed
// rows up to y - 2 for the last time). The first sweep's decision is made from sums
// the fill and the short paths keep. Every step sees what it would see in separate
// passes, in the same order, so the result is the same.
template <int K>
void GridCore<K>::fill_and_start(const GridGraphView& graph, int push_passes) {
  allocate(graph);
  fill_rows_and_start(graph, push_passes);
}

// fill_and_start() on buffers that fit `graph` (allocated, or a strip's view_rows).
template <int K>
void GridCore<K>::fill_rows_and_start(const GridGraphView& graph, int push_passes) {
  augmented_only = true;
  short_flow = 0;
  augmented_flow = 0;
  clear_levels();
  // Rows y - 4 .. y: the fill seeds row y and writes its bytes, the short paths of
  // row y - 1 change rows y - 2 .. y (a root whose terminal they use up leaves its
  // tree), and rows up to y - 2 are then final, so the roots of row y - 3 are
  // activated.
  seeded.reset(width, 5);
  FillTotals totals;
  for (int y = 0; y < height + 3; ++y) {
    if (y < height) {
      const FillTotals row = fill_row(graph, y, &seeded);
      totals.strong += row.strong;
      totals.excess += row.excess;
      totals.given += row.given;
    } else if (y == height) {
      seeded.clear(y);  // the padding row below
    }
    if (y >= 1 && y - 1 < height) short_paths_row(seeded, y - 1);
    if (y >= 3) activate_roots(y - 3);
  }
  paired_flow = totals.given - totals.excess;
  if (push_passes > 0) {
    // The first sweep's seeds are the strong sinks: the fill bounds their capacity,
    // which on most graphs is too small for the sweep to pay; they are looked for
    // only where it may pay. The trees are seeded: a skipped sweep leaves them so.
    static_assert(kStrongPasses > 0, "the first sweep seeds the strong sinks only");
    SweepScan scan;
    start_scan(scan, /*strong_only=*/true, /*seed=*/false);
    scan.excess_total = totals.excess - short_flow;  // a short path takes its flow from a source residual
    if (sweep_pays(totals.strong, scan.excess_total)) collect_strong_seeds(scan);
    run_sweeps(push_passes, &scan);
  }
}

// Grows, augments and adopts until T can grow no more: the flow is then maximum. S
// and T take turns; a turn is a pass over the tree's current level (its scan list
// to the end, with what the pass adds to it) or, where that is done, the step to the
// next level. Growing S on after T has closed would find no path, so the search ends
// there; S closed with T open, T grows alone.
template <int K>
void GridCore<K>::run_search() {
  for (;;) {
    const std::size_t s_left = left_to_scan(0);
    if (left_to_scan(1) == 0) return;
    const int t = s_left == 0 ? 1 : 1 - last_grown;
    last_grown = t;
    if (scan_pos[t] == to_scan[t].size()) {
      next_level_of(t);
    } else if (t == 0) {
      run_pass<true>();
    } else {
      run_pass<false>();
    }
  }
}

// One pass of a tree: scans its nodes of labels up to top, each over its residual
// arcs in the tree's direction: a free neighbour joins the tree one label below it,
// a node of the other tree closes an augmenting path.
template <int K>
template <bool kSourceSide>
void GridCore<K>::run_pass() {
  constexpr int kT = kSourceSide ? 0 : 1;
  constexpr std::uint8_t kTree = kSourceSide ? kSourceTree : kSinkTree;
  Node* const node = nodes.data();
  const std::int32_t* const rc = residual.data();
  std::vector<int>& list = to_scan[kT];
  const int level = top[kT];
  while (scan_pos[kT] < list.size()) {
    const int p = list[scan_pos[kT]++];
    Node& np = node[p];
    if (np.active != kTree) continue;  // the node has changed trees since: a stale entry
    if (np.tree != kTree) {
      np.active = np.tree;
      if (np.tree != kFree) push_level(p, np);  // freed, then taken by the other tree
      continue;
    }
    if (np.distance > level) {  // relabelled since it was listed
      next_level[kT].push_back(p);
      continue;
    }
    for (int d = 0; d < kNumDirections; ++d) {
      const int q = p + offset[d];
      // S: the arc from p (on p's line) first; T: the arc into p lies with q, so q's
      // tree first, which skips the common case (q in T) without reading the arc.
      if constexpr (kSourceSide) {
        if (rc[kNumDirections * p + d] == 0) continue;
      }
      Node& nq = node[q];
      if (nq.tree == kTree) continue;
      if constexpr (!kSourceSide) {
        if (rc[kNumDirections * q + opposite(d)] == 0) continue;
      }
      if (nq.tree == kFree) {
        nq.tree = kTree;
        nq.parent = as_parent(opposite(d));
        nq.distance = np.distance + 1;
        if constexpr (!kSourceSide) in_sink[q] = 1;
        activate(q);
        continue;
      }
      if constexpr (kSourceSide) {
        augment(p, d);
      } else {
        augment(q, opposite(d));
      }
      adopt();
      if (np.tree != kTree || np.distance > level) break;
      d = -1;  // all arcs again: the adoption may have freed a neighbour already passed
    }
    if (np.tree == kTree && np.distance > level) {
      next_level[kT].push_back(p);  // relabelled by the adoption: a later pass
    } else {
      np.active = 0;
    }
  }
}

template <int K>
void GridCore<K>::augment(int from, int dir) {
  Node* const node = nodes.data();
  std::int32_t* const rc = residual.data();
  const int to = from + offset[dir];

  // First walk: the bottleneck, and the path's arcs recorded, so that the second
  // walk (the update) reads no parent and recomputes no index. Paths are long in
  // GrabCut graphs (over a hundred arcs on average at 1 MP) and each step's load
  // depends on the last, so the walk waits on memory: the S and the T side are
  // walked in one loop, two independent chains of loads in flight at once. The
  // second walk then touches only lines the first brought in. The arc between the
  // trees is an n-link arc, so the bottleneck fits in int32.
  source_path.clear();
  sink_path.clear();
  std::int64_t bottleneck = rc[kNumDirections * from + dir];
  int s = from;  // S side: the arcs run from the parent j to s
  int t = to;    // T side: the arcs run from t to its parent
  bool source_open = true;
  bool sink_open = true;
  while (source_open || sink_open) {
    if (source_open) {
      const int a = node[s].parent;
      if (a == kParentTerminal) {
        if (node[s].terminal < bottleneck) bottleneck = node[s].terminal;
        source_open = false;
      } else {
        const int j = s + offset[a];
        const int arc = kNumDirections * j + opposite(a);
        if (rc[arc] < bottleneck) bottleneck = rc[arc];
        source_path.push_back({s, arc, kNumDirections * s + a});
        s = j;
      }
    }
    if (sink_open) {
      const int a = node[t].parent;
      if (a == kParentTerminal) {
        const std::int64_t r = -std::int64_t{node[t].terminal};
        if (r < bottleneck) bottleneck = r;
        sink_open = false;
      } else {
        const int arc = kNumDirections * t + a;
        if (rc[arc] < bottleneck) bottleneck = rc[arc];
        const int j = t + offset[a];
        sink_path.push_back({t, arc, kNumDirections * j + opposite(a)});
        t = j;
      }
    }
  }
  const auto f = static_cast<std::int32_t>(bottleneck);
  augmented_flow += f;

  rc[kNumDirections * from + dir] -= f;
  rc[kNumDirections * to + opposite(dir)] += f;
  // A node whose arc toward its tree's terminal saturates becomes an orphan, S side
  // first from the meeting arc to the root, then the T side likewise.
  const auto push_along = [&](const std::vector<PathArc>& arcs) {
    for (const PathArc& e : arcs) {
      rc[e.forward] -= f;
      rc[e.backward] += f;
      if (rc[e.forward] == 0) make_orphan(e.node);
    }
  };
  push_along(source_path);
  node[s].terminal -= f;
  if (node[s].terminal == 0) make_orphan(s);
  push_along(sink_path);
  node[t].terminal += f;
  if (node[t].terminal == 0) make_orphan(t);
}

template <int K>
void GridCore<K>::adopt() {
  while (!orphans.empty()) {
    const int p = orphans.back();
    orphans.pop_back();
    if (nodes[p].tree == kSourceTree) {
      adopt_orphan<true>(p);
    } else {
      adopt_orphan<false>(p);
    }
  }
}

// An orphan of the source tree looks for a parent q with residual capacity on
// q -> p (flow still arrives from the source side), an orphan of the sink tree for
// one with residual capacity on p -> q; see the header for the rules.
template <int K>
template <bool kSourceSide>
void GridCore<K>::adopt_orphan(int p) {
  constexpr std::uint8_t kTree = kSourceSide ? kSourceTree : kSinkTree;
  constexpr int kT = kSourceSide ? 0 : 1;
  Node* const node = nodes.data();
  const std::int32_t* const rc = residual.data();
  const std::int32_t* const rp = rc + kNumDirections * p;
  Node& np = node[p];
  const int own = np.distance;
  int best = -1;
  int best_label = kInfiniteDistance;
  unsigned children = 0;  // directions of the nodes whose parent is p
  unsigned toward = 0;    // directions of the tree's nodes with an arc toward p
  for (int d = 0; d < kNumDirections; ++d) {
    const int q = p + offset[d];
    const Node& nq = node[q];
    if (nq.tree != kTree) continue;
    children |= static_cast<unsigned>(nq.parent == opposite(d)) << d;
    const bool open = kSourceSide ? rc[kNumDirections * q + opposite(d)] != 0 : rp[d] != 0;
    if (!open) continue;
    if (nq.distance < own) {  // never a child: their labels are above p's
      np.parent = as_parent(d);
      return;
    }
    toward |= 1U << d;
    if (nq.distance < best_label) {
      best_label = nq.distance;
      best = d;
    }
  }
  // The bound holds for the labels a join of strips carries too: an orphan of theirs
  // above top + 1 leaves its tree instead. (Relabels up to the deepest carried label
  // instead took 3x the join's time on grabcut_graph(1024, 1024, 1): orphans kept
  // raising each other; unbounded, the labels ran away.)
  if (best >= 0 && best_label + 1 <= top[kT] + 1) {
    // Relabelled: a parent among its descendants is fine, since the children on the
    // chain down to it (labels below its new one) are orphaned here.
    const int relabelled = best_label + 1;
    for (int d = 0; d < kNumDirections; ++d) {
      if ((children >> d & 1U) != 0 && node[p + offset[d]].distance <= relabelled) make_orphan(p + offset[d]);
    }
    np.parent = as_parent(best);
    np.distance = relabelled;
    return;
  }
  np.tree = kFree;
  np.parent = kNoParent;
  if constexpr (!kSourceSide) in_sink[p] = 0;
  for (int d = 0; d < kNumDirections; ++d) {
    if ((children >> d & 1U) != 0) make_orphan(p + offset[d]);
    if ((toward >> d & 1U) != 0) activate(p + offset[d]);
  }
}

// The canonical cut read off the sink tree. When the search ends, T is exactly the
// set of nodes that can reach the sink in the residual graph: every node of T
// reaches it along its chain of parents (residual arcs, no orphan left), and no node
// outside T has a residual arc into T, since a node of T with an arc from a node not
// in T has an entry in T's level lists (seeding lists those roots) until a pass has
// taken in every neighbour with such an arc (growth), one that leaves T lists its T
// neighbours with an arc from it again (adoption), an augmentation opens residual
// only on arcs inside a tree or from T to S, and the search ends only once T's lists
// are empty. So the
// source side, the nodes that cannot reach the sink, is every node not in T. (The
// strips of a parallel solve end the same way: the last search covers the grid.)
// Read from in_sink: a pass over a byte a node, where the nodes' tree bytes lie 16
// bytes apart (at 1 MP, 1 MB read where the nodes are 16 MB, most of it out of
// cache by now).
template <int K>
void GridCore<K>::compute_cut(std::uint8_t* source_side) {
  // The sizes in locals: a byte store may alias any member, which would be read
  // again for every byte and keep the loop from being vectorised.
  const int h = height;
  const int w = width;
  const std::size_t row_stride = static_cast<std::size_t>(stride);
  const std::uint8_t* const bytes = in_sink.data();
  for (int y = 0; y < h; ++y) {
    const std::uint8_t* const row = bytes + (static_cast<std::size_t>(y) + 1) * row_stride + 1;
    std::uint8_t* const out = source_side + static_cast<std::size_t>(y) * static_cast<std::size_t>(w);
    for (int x = 0; x < w; ++x) out[x] = static_cast<std::uint8_t>(row[x] ^ 1U);
  }
}

namespace {

void check_graph(const GridGraphView& graph, const std::uint8_t* source_side, const char* who) {
  if (graph.height < 0 || graph.width < 0) {
    throw std::invalid_argument(std::string(who) + ": height and width must be >= 0, got " +
                                std::to_string(graph.height) + " x " + std::to_string(graph.width));
  }
  if (graph.height == 0 || graph.width == 0) return;
  const bool terminals = graph.terminal != nullptr || (graph.source != nullptr && graph.sink != nullptr);
  const bool diagonals =
      graph.four_connected || (graph.nlink[kDownRight] != nullptr && graph.nlink[kDownLeft] != nullptr);
  if (!terminals || graph.nlink[kRight] == nullptr || graph.nlink[kDown] == nullptr || !diagonals ||
      source_side == nullptr) {
    throw std::invalid_argument(std::string(who) + ": null array for a non-empty graph");
  }
}

// Threads of a solve (see set_num_threads); 1 is the serial solve. A parallel one
// needs two rows a strip (one of them, in all but the first, a separator).
int strip_count(int requested, int height, int width) {
  int k = requested;
  if (k == 0) {
    constexpr std::int64_t kMinParallelPixels = std::int64_t{256} * 256;
    if (omp_in_parallel() != 0 || std::int64_t{height} * width < kMinParallelPixels) return 1;
    k = std::min(omp_get_max_threads(), 8);
  }
  return std::max(1, std::min(k, height / 2));
}

// Strips of a serial cold solve in strips (see set_serial_strips), of at least
// kMinSerialStripBytes of the solver's arrays each; 1: no strips.
constexpr int kSerialStrips = 6;
constexpr std::int64_t kMinSerialStripBytes = std::int64_t{4} << 20;
template <int K>
int serial_strip_count(int height, int width) {
  const std::int64_t bytes = (std::int64_t{height} + 2) * (std::int64_t{width} + 2) *
                             static_cast<std::int64_t>(K * sizeof(std::int32_t) + sizeof(Node));
  const std::int64_t strips = std::min<std::int64_t>(kSerialStrips, bytes / kMinSerialStripBytes);
  return strips >= 2 && height >= 4 ? static_cast<int>(strips) : 1;
}

// cut_capacity() for a graph the K-neighbour solver can take: with K = 4 its
// diagonal n-links inside the grid are zero, and are not read. Row by row, each
// term a select rather than a branch, so that the loops stream and vectorise.
template <int K>
std::int64_t cut_capacity_of(const GridGraphView& graph, const std::uint8_t* source_side) {
  const int h = graph.height;
  const int w = graph.width;
  if (h <= 0 || w <= 0) return 0;
  std::int64_t total = 0;
  for (int y = 0; y < h; ++y) {
    const std::size_t row = static_cast<std::size_t>(y) * static_cast<std::size_t>(w);
    const std::uint8_t* const s = source_side + row;
    std::int64_t sum = 0;
    // A terminal edge is cut when its pixel is on the other terminal's side.
    if (graph.terminal != nullptr) {
      const std::int32_t* const t = graph.terminal + row;
      for (int x = 0; x < w; ++x) {
        const std::int64_t tx = t[x];
        sum += s[x] != 0 ? std::max<std::int64_t>(-tx, 0) : std::max<std::int64_t>(tx, 0);
      }
    } else {
      const std::int32_t* const source = graph.source + row;
      const std::int32_t* const sink = graph.sink + row;
      for (int x = 0; x < w; ++x) sum += s[x] != 0 ? sink[x] : source[x];
    }
    const std::int32_t* const right = graph.nlink[kRight] + row;
    for (int x = 0; x + 1 < w; ++x) sum += (s[x] != 0) != (s[x + 1] != 0) ? right[x] : 0;
    if (y + 1 < h) {
      const std::uint8_t* const below = s + w;
      const std::int32_t* const down = graph.nlink[kDown] + row;
      for (int x = 0; x < w; ++x) sum += (s[x] != 0) != (below[x] != 0) ? down[x] : 0;
      if constexpr (K == 8) {
        const std::int32_t* const down_right = graph.nlink[kDownRight] + row;
        const std::int32_t* const down_left = graph.nlink[kDownLeft] + row;
        for (int x = 0; x + 1 < w; ++x) sum += (s[x] != 0) != (below[x + 1] != 0) ? down_right[x] : 0;
        for (int x = 1; x < w; ++x) sum += (s[x] != 0) != (below[x - 1] != 0) ? down_left[x] : 0;
      }
    }
    total += sum;
  }
  return total;
}

// Whether any diagonal n-link inside the grid is nonzero (entries for neighbours
// outside the grid are ignored, as everywhere). Stops at the first one, so an
// 8-connected graph costs a few reads; a 4-connected one, a read of both planes.
bool has_diagonals(const GridGraphView& graph) {
  const int h = graph.height;
  const int w = graph.width;
  const std::int32_t* const down_right = graph.nlink[kDownRight];
  const std::int32_t* const down_left = graph.nlink[kDownLeft];
  for (int y = 0; y + 1 < h; ++y) {
    const std::size_t row = static_cast<std::size_t>(y) * static_cast<std::size_t>(w);
    std::uint32_t any = 0;
    for (int x = 0; x + 1 < w; ++x) {
      any |= static_cast<std::uint32_t>(down_right[row + static_cast<std::size_t>(x)]) |
             static_cast<std::uint32_t>(down_left[row + static_cast<std::size_t>(x) + 1]);
    }
    if (any != 0) return true;
  }
  return false;
}

}  // namespace

// The rest of a solve once the buffers hold the residual graph to start from (after
// prepare() or reparametrise()): the search, in strips where the grid is large
// enough, then the canonical cut; returns its capacity in `graph`.
template <int K>
std::int64_t GridCore<K>::solve_from_here(const GridGraphView& graph, int push_passes, int num_threads,
                                          std::uint8_t* source_side) {
  const int threads = strip_count(num_threads, graph.height, graph.width);
  if (threads > 1) {
    solve_in_strips(threads, kStripsPerThread * threads, push_passes, nullptr);
  } else {
    start_trees(push_passes);
  }
  return finish_solve(graph, source_side);
}

// The search to a maximum flow, from trees started, then the canonical cut; returns
// the maximum flow value of `graph` (the cut's capacity in it).
template <int K>
std::int64_t GridCore<K>::finish_solve(const GridGraphView& graph, std::uint8_t* source_side) {
  run_search();
  compute_cut(source_side);
  remember_terminals(graph);
  if (augmented_only) return paired_flow + short_flow + augmented_flow;
  return cut_capacity_of<K>(graph, source_side);
}

// A solver for each neighbourhood, made when first used, with its buffers kept.
// Only the one that solved last may hold a flow for a warm start.
struct GridMaxflowSolver::Impl {
  int num_threads = 0;            // see GridMaxflowSolver::set_num_threads
  bool four_connected_path = true;  // see GridMaxflowSolver::set_four_connected_path
  bool keep_flow = true;            // see GridMaxflowSolver::set_keep_flow
  bool serial_strips = false;       // see GridMaxflowSolver::set_serial_strips
  std::unique_ptr<GridCore<8>> eight;
  std::unique_ptr<GridCore<4>> four;
  std::vector<std::int32_t> zeros;  // the diagonals of a four_connected graph on the 8-neighbour path

  // The core for `graph`, its other core's flow forgotten.
  template <int K>
  GridCore<K>& core() {
    auto& mine = std::get<std::unique_ptr<GridCore<K>>&>(std::tie(eight, four));
    auto& other = std::get<std::unique_ptr<GridCore<12 - K>>&>(std::tie(eight, four));
    if (other) other->has_flow = false;
    if (!mine) mine = std::make_unique<GridCore<K>>();
    mine->keep_flow = keep_flow;
    return *mine;
  }

  template <int K>
  std::int64_t solve(const GridGraphView& graph, bool warm, std::uint8_t* source_side) {
    GridCore<K>& c = core<K>();
    if (warm && c.reparametrise(graph)) return c.solve_from_here(graph, kWarmPushPasses, num_threads, source_side);
    const int threads = strip_count(num_threads, graph.height, graph.width);
    const int strips = threads > 1 ? kStripsPerThread * threads
                                   : (serial_strips ? serial_strip_count<K>(graph.height, graph.width) : 1);
    if (strips == 1) {
      c.fill_and_start(graph, kColdPushPasses);
    } else {
      c.allocate(graph);
      c.solve_in_strips(threads, strips, kColdPushPasses, &graph);
    }
    return c.finish_solve(graph, source_side);
  }

  std::int64_t solve(const GridGraphView& graph, bool warm, std::uint8_t* source_side) {
    if (graph.four_connected) {
      if (four_connected_path) return solve<4>(graph, warm, source_side);
      // The 8-neighbour solver reads the diagonals: planes of zeros.
      GridGraphView with_zeros = graph;
      zeros.assign(static_cast<std::size_t>(graph.height) * static_cast<std::size_t>(graph.width), 0);
      with_zeros.nlink[kDownRight] = with_zeros.nlink[kDownLeft] = zeros.data();
      with_zeros.four_connected = false;
      return solve<8>(with_zeros, warm, source_side);
    }
    if (four_connected_path && !has_diagonals(graph)) return solve<4>(graph, warm, source_side);
    return solve<8>(graph, warm, source_side);
  }
};

GridMaxflowSolver::GridMaxflowSolver() : impl_(std::make_unique<Impl>()) {}
GridMaxflowSolver::~GridMaxflowSolver() = default;
GridMaxflowSolver::GridMaxflowSolver(GridMaxflowSolver&&) noexcept = default;
GridMaxflowSolver& GridMaxflowSolver::operator=(GridMaxflowSolver&&) noexcept = default;

std::int64_t GridMaxflowSolver::solve(const GridGraphView& graph, std::uint8_t* source_side) {
  check_graph(graph, source_side, "GridMaxflowSolver::solve");
  if (graph.height == 0 || graph.width == 0) return 0;
  if (!impl_) impl_ = std::make_unique<Impl>();  // a moved-from solver is usable again
  return impl_->solve(graph, /*warm=*/false, source_side);
}

std::int64_t GridMaxflowSolver::solve_warm(const GridGraphView& graph, std::uint8_t* source_side) {
  check_graph(graph, source_side, "GridMaxflowSolver::solve_warm");
  if (graph.height == 0 || graph.width == 0) return 0;
  if (!impl_) impl_ = std::make_unique<Impl>();
  return impl_->solve(graph, /*warm=*/true, source_side);
}

void GridMaxflowSolver::set_num_threads(int threads) {
  if (!impl_) impl_ = std::make_unique<Impl>();
  impl_->num_threads = std::max(threads, 0);
}

void GridMaxflowSolver::set_serial_strips(bool enabled) {
  if (!impl_) impl_ = std::make_unique<Impl>();
  impl_->serial_strips = enabled;
}

void GridMaxflowSolver::set_four_connected_path(bool enabled) {
  if (!impl_) impl_ = std::make_unique<Impl>();
  impl_->four_connected_path = enabled;
}

void GridMaxflowSolver::set_keep_flow(bool enabled) {
  if (!impl_) impl_ = std::make_unique<Impl>();
  impl_->keep_flow = enabled;
  if (!enabled) {
    if (impl_->eight) impl_->eight->has_flow = false;
    if (impl_->four) impl_->four->has_flow = false;
  }
}

std::int64_t cut_capacity(const GridGraphView& graph, const std::uint8_t* source_side) {
  return graph.four_connected ? cut_capacity_of<4>(graph, source_side) : cut_capacity_of<8>(graph, source_side);
}

}  // namespace grabcut
