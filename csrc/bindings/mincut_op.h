// torchgrabcut::mincut_grid: the public grid min-cut (python/torchgrabcut/graphcut.py)
// on the grid max-flow solvers. Shared by the CPU kernel (mincut_op.cpp) and the
// CUDA kernel (mincut_op_cuda.cpp): the checks, the bounds and the reduction of the
// user's graph to the solvers' form. The reduction of one pixel, arithmetic and
// checks, is one __host__ __device__ function, grabcut::mincut_reduce_pixel
// (core/mincut_pixel.h), run by the CPU pass below and by the CUDA kernel
// (cuda/mincut_reduce.cu); the first error's message is found on the host by
// find_first_error, for both backends.
//
// The user's graph: per pixel a source and a sink capacity, and per forward
// neighbour k an edge capacity (symmetric form), or one per direction (asymmetric
// form: edges[k] from the pixel to its neighbour, reverse[k] back). Public
// neighbour order (2D): right (0, 1), down (1, 0), then for 8-connected grids
// down-right (1, 1) and down-left (1, -1); edges that leave the grid are ignored.
//
// The solvers' form (core/maxflow.h): a net terminal s - t per pixel and a
// symmetric n-link per forward direction, in the solvers' direction order. Folding
// the two terminal edges into one subtracts min(s, t) from every cut; the flow
// value is that constant plus the solver's flow.
//
// The asymmetric form is reduced to a symmetric one on capacities doubled: an arc
// p -> q of capacity a costs a when p is on the source side and q on the sink side,
// which equals a/2 for an undirected edge, plus a/2 on p's sink edge and a/2 on q's
// source edge, minus a/2 on every cut. Doubled, so that everything stays integer,
// an edge pair (a: p -> q, b: q -> p) becomes an n-link a + b, p gains source b and
// sink a, q gains source a and sink b, and every cut gains a + b; 2 * cut + sum(a + b)
// is then the cut of the reduced graph. Every cut is mapped by the same increasing
// affine map, so the minimum cuts, the canonical one included, are the same sets.
//
// Bounds. For every pixel, source + sink + the capacities of its edges on the grid
// (in both directions in the asymmetric form) must be at most kMincutMaxNodeSum =
// 2^30 - 1. That bounds every capacity the solvers see: n-links by 2^30 - 1 (the
// CPU solver keeps an n-link's two residuals, which add up to twice its capacity, in
// int32), and net terminals by 2^31 - 2 in magnitude, even doubled. A node's excess
// in any push or augmentation stays below its node sum. The pixels of one graph are
// bounded by the CPU solver's padded grid, (H + 2) * (W + 2) <= kMincutMaxPadded =
// 2^28 - 1, so a flow value is below 2^28 * 2^31 = 2^59: int64 cannot overflow
// anywhere below, including the doubled sums of the asymmetric form.
#pragma once

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/maxflow.h"
#include "core/mincut_pixel.h"

namespace torchgrabcut {

constexpr int64_t kMincutMaxNodeSum = grabcut::kMincutMaxNodeSum;
constexpr int64_t kMincutMaxPadded = (int64_t{1} << 28) - 1;
static_assert(kMincutMaxPadded * 8 <= INT32_MAX, "the CPU solver indexes 8 arcs per padded node in int");
static_assert(kMincutMaxPadded * 2 * (2 * kMincutMaxNodeSum) < INT64_MAX / 4, "flow sums fit in int64");

struct MincutShape {
  int64_t batch = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t neighbours = 0;  // K: 2 (4-connected) or 4 (8-connected)
  bool asymmetric = false;
};

inline MincutShape check_mincut_args(const at::Tensor& source, const at::Tensor& sink, const at::Tensor& edges,
                                     const std::optional<at::Tensor>& reverse) {
  const auto is_int = [](const at::Tensor& t) {
    return t.scalar_type() == at::kInt || t.scalar_type() == at::kLong;
  };
  TORCH_CHECK_TYPE(is_int(source), "source: expected dtype int32 or int64, got ", source.scalar_type());
  TORCH_CHECK_TYPE(sink.scalar_type() == source.scalar_type() && edges.scalar_type() == source.scalar_type(),
                   "sink and edges: expected the dtype of source (", source.scalar_type(), "), got ",
                   sink.scalar_type(), " and ", edges.scalar_type());
  TORCH_CHECK_VALUE(source.dim() == 3, "source: expected shape (B, H, W), got ", source.sizes());
  TORCH_CHECK_VALUE(sink.sizes() == source.sizes(), "sink: expected the shape of source ", source.sizes(), ", got ",
                    sink.sizes());
  TORCH_CHECK_VALUE(edges.dim() == 4 && edges.size(0) == source.size(0) && edges.size(2) == source.size(1) &&
                        edges.size(3) == source.size(2) && (edges.size(1) == 2 || edges.size(1) == 4),
                    "edges: expected shape (B, K, H, W) with B, H, W = ", source.sizes(),
                    " and K = 2 (4-connected) or 4 (8-connected), got ", edges.sizes());
  TORCH_CHECK_VALUE(sink.device() == source.device() && edges.device() == source.device(),
                    "source, sink and edges: expected one device, got ", source.device(), ", ", sink.device(), ", ",
                    edges.device());
  MincutShape shape;
  if (reverse.has_value()) {
    TORCH_CHECK_TYPE(reverse->scalar_type() == source.scalar_type(), "reverse_edges: expected the dtype of source (",
                     source.scalar_type(), "), got ", reverse->scalar_type());
    TORCH_CHECK_VALUE(reverse->sizes() == edges.sizes(), "reverse_edges: expected the shape of edges ", edges.sizes(),
                      ", got ", reverse->sizes());
    TORCH_CHECK_VALUE(reverse->device() == source.device(), "reverse_edges: expected the device of source (",
                      source.device(), "), got ", reverse->device());
    shape.asymmetric = true;
  }
  shape.batch = source.size(0);
  shape.height = source.size(1);
  shape.width = source.size(2);
  shape.neighbours = edges.size(1);
  TORCH_CHECK_VALUE((shape.height + 2) * (shape.width + 2) <= kMincutMaxPadded || shape.height == 0 ||
                        shape.width == 0,
                    "a grid of ", shape.height, " x ", shape.width,
                    " pixels is too large: expected (H + 2) * (W + 2) <= 2^28 - 1 = ", kMincutMaxPadded);
  return shape;
}

// The user's graph in the solvers' form.
struct MincutGraph {
  at::Tensor net;     // (B, H, W) int32, contiguous: source - sink (doubled graph when asymmetric)
  // (B, K, H, W) int32 in the public order, undefined where the input is used as it is
  // (the CPU path; the CUDA kernel keeps its n-links to itself, mincut_op_cuda.cpp).
  at::Tensor nlinks;
  // The CPU path: the solvers' n-link arrays of graph b, direction d: nlink_ptr[4 * b + d],
  // into `keep` (nlinks or the input) or, for 4-connected diagonals, `zeros`.
  std::vector<const int32_t*> nlink_ptr;
  at::Tensor keep;
  at::Tensor zeros;
  at::Tensor offset;  // (B,) int64: flow = (solver flow + offset) / divisor
  int64_t divisor = 1;
};

namespace detail {

// A capacity out of range or a node sum over the bound, and where.
struct MincutError {
  int64_t b = INT64_MAX, y = 0, x = 0;
  int what = 0;  // 0 source, 1 sink, 2 edges, 3 reverse_edges, 4 node sum
  int k = 0;
  int64_t value = 0;
  int64_t z = -1;  // a voxel's z in 3D; -1 in 2D
};

[[noreturn]] inline void throw_mincut_error(const MincutError& e) {
  static const char* const kNeighbour[4] = {"right", "down", "down-right", "down-left"};
  static const char* const kNeighbour3d[3] = {"x + 1", "y + 1", "z + 1"};
  static const char* const kName[4] = {"source", "sink", "edges", "reverse_edges"};
  const std::string where = "graph " + std::to_string(e.b) +
                            (e.z >= 0 ? ", voxel (z=" + std::to_string(e.z) + ", " : std::string(", pixel (")) +
                            "y=" + std::to_string(e.y) + ", x=" + std::to_string(e.x) + ")";
  if (e.what == 4) {
    TORCH_CHECK_VALUE(false, "the capacities at ", where, " add up to ", e.value,
                      " (source + sink + its edges), over the bound 2^30 - 1 = ", kMincutMaxNodeSum,
                      " on every pixel's sum");
  }
  const std::string edge =
      e.what >= 2 ? std::string(", edge ") + std::to_string(e.k) + " (" + (e.z >= 0 ? kNeighbour3d : kNeighbour)[e.k] + ")"
                  : std::string();
  TORCH_CHECK_VALUE(false, kName[e.what], ": expected capacities in [0, 2^30 - 1 = ", kMincutMaxNodeSum, "], got ",
                    e.value, " at ", where, edge);
}

inline bool in_range(int64_t v) { return grabcut::mincut_in_range(v); }

// The first capacity out of range or node sum over the bound in (graph, y, x) order,
// pixel by pixel with every bound checked, the pixel's values in the order of the
// message (source, sink, then each edge and its reverse, then the node sum): run on
// the host when the fast pass (mincut_reduce_pixel, on the CPU or the GPU) found one,
// to say which. Written apart from mincut_reduce_pixel on purpose: the two must agree
// (an internal assertion where they are used), so each checks the other.
template <typename T>
MincutError find_first_error(const MincutShape& s, const T* src, const T* snk, const T* edg, const T* rev) {
  const int64_t h = s.height, w = s.width, kk = s.neighbours, hw = h * w;
  MincutError e;
  const auto fail = [&](int64_t b, int64_t y, int64_t x, int what, int k, int64_t value) {
    e.b = b;
    e.y = y;
    e.x = x;
    e.what = what;
    e.k = k;
    e.value = value;
    return e;
  };
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        const int64_t i = b * hw + y * w + x;
        const int64_t sv = src[i], tv = snk[i];
        if (!in_range(sv)) return fail(b, y, x, 0, 0, sv);
        if (!in_range(tv)) return fail(b, y, x, 1, 0, tv);
        int64_t sum = sv + tv;
        for (int k = 0; k < kk; ++k) {
          const int64_t dy = grabcut::mincut_dy(k), dx = grabcut::mincut_dx(k);
          const int64_t plane = (b * kk + k) * hw - b * hw;
          if (y + dy < h && x + dx >= 0 && x + dx < w) {
            const int64_t a = edg[plane + i], r = rev != nullptr ? rev[plane + i] : 0;
            if (!in_range(a)) return fail(b, y, x, 2, k, a);
            if (!in_range(r)) return fail(b, y, x, 3, k, r);
            sum += a + r;
          }
          // The edge into this pixel belongs to an earlier pixel in raster order, checked
          // already: its values are in range here.
          if (y - dy >= 0 && x - dx >= 0 && x - dx < w) {
            const int64_t j = plane + i - dy * w - dx;
            sum += edg[j] + (rev != nullptr ? rev[j] : 0);
          }
        }
        if (sum > kMincutMaxNodeSum) return fail(b, y, x, 4, 0, sum);
      }
    }
  }
  return e;
}

// One row of one graph, the pixels x0 <= x < x1 of it, with kChecked: neighbours
// outside the grid possible (the border); without it the neighbours of every pixel are
// inside (the interior). Returns false if a capacity or a node sum is out of range.
template <typename T, int K, bool kAsym, bool kWriteNl, bool kChecked>
inline bool reduce_span(const T* src, const T* snk, const T* const* edg, const T* const* rev, int64_t h, int64_t w,
                        int64_t y, int64_t x0, int64_t x1, int32_t* net, int32_t* const* nl, int64_t& offset) {
  bool ok = true;
  for (int64_t x = x0; x < x1; ++x) {
    ok &= grabcut::mincut_reduce_pixel<T, K, kAsym, kWriteNl, kChecked>(src, snk, edg, rev, h, w, y, x, net, nl,
                                                                          offset);
  }
  return ok;
}

// The fast pass over the batch, rows in parallel: net terminals, per-row offsets and,
// with kWriteNl, the solvers' n-links; false if anything is out of range (then
// find_first_error says what).
template <typename T, int K, bool kAsym, bool kWriteNl>
bool reduce_rows(const MincutShape& s, const T* src, const T* snk, const T* edg, const T* rev, int32_t* net,
                 int32_t* nl, int64_t* row_offset) {
  const int64_t h = s.height, w = s.width, hw = h * w;
  std::atomic<bool> ok{true};
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(w, 1));
  at::parallel_for(0, s.batch * h, grain, [&](int64_t begin, int64_t end) {
    bool mine = true;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / h, y = row % h;
      const T* e[K];
      const T* r[K];
      int32_t* n[K];
      for (int k = 0; k < K; ++k) {
        e[k] = edg + (b * K + k) * hw;
        r[k] = kAsym ? rev + (b * K + k) * hw : nullptr;
        n[k] = kWriteNl ? nl + (b * K + k) * hw : nullptr;
      }
      const T* sb = src + b * hw;
      const T* tb = snk + b * hw;
      int32_t* nb = net + b * hw;
      int64_t offset = 0;
      if (y == 0 || y == h - 1 || w < 3) {
        mine &= reduce_span<T, K, kAsym, kWriteNl, true>(sb, tb, e, r, h, w, y, 0, w, nb, n, offset);
      } else {
        mine &= reduce_span<T, K, kAsym, kWriteNl, true>(sb, tb, e, r, h, w, y, 0, 1, nb, n, offset);
        mine &= reduce_span<T, K, kAsym, kWriteNl, false>(sb, tb, e, r, h, w, y, 1, w - 1, nb, n, offset);
        mine &= reduce_span<T, K, kAsym, kWriteNl, true>(sb, tb, e, r, h, w, y, w - 1, w, nb, n, offset);
      }
      row_offset[row] = offset;
    }
    if (!mine) ok.store(false, std::memory_order_relaxed);
  });
  return ok.load();
}

template <typename T>
bool reduce_rows_dispatch(const MincutShape& s, const T* src, const T* snk, const T* edg, const T* rev, int32_t* net,
                          int32_t* nl, int64_t* row_offset) {
  const bool write = nl != nullptr;
  if (s.asymmetric) {
    return s.neighbours == 2 ? reduce_rows<T, 2, true, true>(s, src, snk, edg, rev, net, nl, row_offset)
                             : reduce_rows<T, 4, true, true>(s, src, snk, edg, rev, net, nl, row_offset);
  }
  if (s.neighbours == 2) {
    return write ? reduce_rows<T, 2, false, true>(s, src, snk, edg, rev, net, nl, row_offset)
                 : reduce_rows<T, 2, false, false>(s, src, snk, edg, rev, net, nl, row_offset);
  }
  return write ? reduce_rows<T, 4, false, true>(s, src, snk, edg, rev, net, nl, row_offset)
               : reduce_rows<T, 4, false, false>(s, src, snk, edg, rev, net, nl, row_offset);
}

}  // namespace detail

// The CPU form: one fused pass. Symmetric int32 input is used in place (the CPU
// solver reads no n-link that leaves the grid); anything else is converted.
inline MincutGraph mincut_graph_cpu(const MincutShape& s, const at::Tensor& source, const at::Tensor& sink,
                                    const at::Tensor& edges, const std::optional<at::Tensor>& reverse) {
  MincutGraph g;
  const at::Tensor src = source.contiguous(), snk = sink.contiguous(), edg = edges.contiguous();
  const at::Tensor rev = reverse.has_value() ? reverse->contiguous() : at::Tensor();
  g.net = at::empty({s.batch, s.height, s.width}, source.options().dtype(at::kInt));
  // Symmetric int32 edges are the solver's n-links as they are (it reads none that
  // leaves the grid); anything else is converted, in the public order (B, K, H, W).
  const bool borrow = !s.asymmetric && source.scalar_type() == at::kInt;
  if (!borrow) g.nlinks = at::empty({s.batch, s.neighbours, s.height, s.width}, source.options().dtype(at::kInt));
  at::Tensor rows = at::empty({s.batch * s.height}, source.options().dtype(at::kLong));
  AT_DISPATCH_INDEX_TYPES(source.scalar_type(), "mincut_grid", [&] {
    const index_t* r = rev.defined() ? rev.data_ptr<index_t>() : nullptr;
    int32_t* nl = borrow ? nullptr : g.nlinks.data_ptr<int32_t>();
    if (!detail::reduce_rows_dispatch<index_t>(s, src.data_ptr<index_t>(), snk.data_ptr<index_t>(),
                                               edg.data_ptr<index_t>(), r, g.net.data_ptr<int32_t>(), nl,
                                               rows.data_ptr<int64_t>())) {
      const detail::MincutError first = detail::find_first_error<index_t>(
          s, src.data_ptr<index_t>(), snk.data_ptr<index_t>(), edg.data_ptr<index_t>(), r);
      TORCH_INTERNAL_ASSERT(first.b != INT64_MAX, "mincut_grid: the fast and the exact check disagree");
      detail::throw_mincut_error(first);
    }
  });
  g.offset = rows.view({s.batch, s.height}).sum(1);
  g.divisor = s.asymmetric ? 2 : 1;
  const int64_t hw = s.height * s.width;
  g.nlink_ptr.resize(static_cast<size_t>(4 * s.batch));
  g.keep = borrow ? edg : g.nlinks;
  const int32_t* n = g.keep.data_ptr<int32_t>();
  if (s.neighbours == 2) {
    // 4-connected on the 8-connected solver: the diagonals read one plane of zeros.
    g.zeros = at::zeros({hw}, source.options().dtype(at::kInt));
  }
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int k = 0; k < 4; ++k) {
      g.nlink_ptr[4 * b + grabcut::mincut_solver_direction(k)] =
          k < s.neighbours ? n + (b * s.neighbours + k) * hw : g.zeros.data_ptr<int32_t>();
    }
  }
  return g;
}

// The outputs of a batch without pixels (B = 0, H = 0 or W = 0): nothing to solve.
inline std::tuple<at::Tensor, at::Tensor> mincut_empty_result(const MincutShape& s, const at::Tensor& source) {
  return {at::empty({s.batch, s.height, s.width}, source.options().dtype(at::kBool)),
          at::zeros({s.batch}, source.options().dtype(at::kLong))};
}

// The cut as bool and the flow of the user's graph from the solvers' uint8 cut and flows.
inline std::tuple<at::Tensor, at::Tensor> mincut_result(const MincutGraph& g, const at::Tensor& cut,
                                                        const at::Tensor& flows) {
  at::Tensor flow = flows + g.offset.to(flows.device());
  if (g.divisor != 1) flow = at::div(flow, g.divisor, "floor");
  return {cut.view(at::kBool), flow};
}

// 3D, 6-connected: the public neighbours of a voxel (z, y, x) are (z, y, x + 1),
// (z, y + 1, x), (z + 1, y, x). The same bound, reduction and messages as in 2D.
struct Mincut3dShape {
  int64_t batch = 0, depth = 0, height = 0, width = 0;
  bool asymmetric = false;
};

inline Mincut3dShape check_mincut3d_args(const at::Tensor& source, const at::Tensor& sink, const at::Tensor& edges,
                                         const std::optional<at::Tensor>& reverse) {
  TORCH_CHECK_TYPE(source.scalar_type() == at::kInt || source.scalar_type() == at::kLong,
                   "source: expected dtype int32 or int64, got ", source.scalar_type());
  TORCH_CHECK_TYPE(sink.scalar_type() == source.scalar_type() && edges.scalar_type() == source.scalar_type() &&
                       (!reverse.has_value() || reverse->scalar_type() == source.scalar_type()),
                   "sink, edges and reverse_edges: expected the dtype of source (", source.scalar_type(), ")");
  TORCH_CHECK_VALUE(source.dim() == 4, "source: expected shape (B, D, H, W), got ", source.sizes());
  TORCH_CHECK_VALUE(sink.sizes() == source.sizes(), "sink: expected the shape of source ", source.sizes(), ", got ",
                    sink.sizes());
  TORCH_CHECK_VALUE(edges.dim() == 5 && edges.size(0) == source.size(0) && edges.size(1) == 3 &&
                        edges.size(2) == source.size(1) && edges.size(3) == source.size(2) &&
                        edges.size(4) == source.size(3),
                    "edges: expected shape (B, 3, D, H, W) with B, D, H, W = ", source.sizes(), ", got ",
                    edges.sizes());
  TORCH_CHECK_VALUE(!reverse.has_value() || reverse->sizes() == edges.sizes(),
                    "reverse_edges: expected the shape of edges ", edges.sizes());
  // The CPU kernel (mincut_op.cpp) or the CUDA one (mincut3d_op_cuda.cpp), by the dispatcher.
  TORCH_CHECK_VALUE(sink.device() == source.device() && edges.device() == source.device(),
                    "source, sink and edges: expected one device, got ", source.device(), ", ", sink.device(), ", ",
                    edges.device());
  TORCH_CHECK_VALUE(!reverse.has_value() || reverse->device() == source.device(),
                    "reverse_edges: expected the device of source (", source.device(), "), got ", reverse->device());
  Mincut3dShape s;
  s.batch = source.size(0);
  s.depth = source.size(1);
  s.height = source.size(2);
  s.width = source.size(3);
  s.asymmetric = reverse.has_value();
  TORCH_CHECK_VALUE(s.depth == 0 || s.height == 0 || s.width == 0 ||
                        (s.depth + 2) * (s.height + 2) * (s.width + 2) <= kMincutMaxPadded,
                    "a grid of ", s.depth, " x ", s.height, " x ", s.width,
                    " voxels is too large: expected (D + 2) * (H + 2) * (W + 2) <= 2^28 - 1 = ", kMincutMaxPadded);
  return s;
}

namespace detail {

// One voxel: checks (ok), and with net its net terminal and share of the offset, with nl
// its forward n-links (3 planes of the graph). Returns 1 on an error (in *error).
template <typename T>
inline int reduce_voxel(const Mincut3dShape& s, const T* src, const T* snk, const T* edg, const T* rev, int64_t b,
                        int64_t z, int64_t y, int64_t x, int32_t* net, int32_t* nl, int64_t& offset,
                        MincutError* error) {
  const int64_t hw = s.height * s.width, n = s.depth * hw;
  const int64_t v = z * hw + y * s.width + x;
  const int64_t coord[3] = {x, y, z};
  const int64_t size[3] = {s.width, s.height, s.depth};
  const int64_t stride[3] = {1, s.width, hw};
  const auto fail = [&](int what, int k, int64_t value) {
    if (error != nullptr) *error = MincutError{b, y, x, what, k, value, z};
    return 1;
  };
  const int64_t sv = src[b * n + v], tv = snk[b * n + v];
  if (!in_range(sv)) return fail(0, 0, sv);
  if (!in_range(tv)) return fail(1, 0, tv);
  int64_t sum = sv + tv, s2 = 2 * sv, t2 = 2 * tv, both = 0;
  for (int k = 0; k < 3; ++k) {
    const T* e = edg + (b * 3 + k) * n;
    const T* r = rev != nullptr ? rev + (b * 3 + k) * n : nullptr;
    int64_t a = 0, ra = 0;
    if (coord[k] + 1 < size[k]) {
      a = e[v];
      ra = r != nullptr ? r[v] : 0;
      if (!in_range(a)) return fail(2, k, a);
      if (!in_range(ra)) return fail(3, k, ra);
    }
    int64_t ia = 0, ir = 0;
    if (coord[k] >= 1) {
      // An earlier voxel's edge, checked there first.
      ia = std::clamp<int64_t>(e[v - stride[k]], 0, kMincutMaxNodeSum + 1);
      ir = r != nullptr ? std::clamp<int64_t>(r[v - stride[k]], 0, kMincutMaxNodeSum + 1) : 0;
    }
    sum += a + ra + ia + ir;
    s2 += ra + ia;
    t2 += a + ir;
    both += a + ra;
    if (nl != nullptr) nl[(b * 3 + k) * n + v] = static_cast<int32_t>(a + ra);
  }
  if (sum > kMincutMaxNodeSum) return fail(4, 0, sum);
  if (net == nullptr) return 0;
  if (rev == nullptr) {
    net[b * n + v] = static_cast<int32_t>(sv - tv);
    offset += std::min(sv, tv);
  } else {
    net[b * n + v] = static_cast<int32_t>(s2 - t2);
    offset += std::min(s2, t2) - both;
  }
  return 0;
}

// The first error of a 3D batch in (graph, z, y, x) order, where a check found one.
template <typename T>
MincutError find_first_error3d(const Mincut3dShape& s, const T* src, const T* snk, const T* edg, const T* rev) {
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t z = 0; z < s.depth; ++z) {
      for (int64_t y = 0; y < s.height; ++y) {
        for (int64_t x = 0; x < s.width; ++x) {
          MincutError e;
          int64_t unused = 0;
          if (reduce_voxel<T>(s, src, snk, edg, rev, b, z, y, x, nullptr, nullptr, unused, &e)) return e;
        }
      }
    }
  }
  TORCH_INTERNAL_ASSERT(false, "mincut_grid3d: the check found an error it cannot locate");
  return MincutError{};
}

}  // namespace detail

// The CPU form of a 3D batch: net terminals, n-links (the input where it is
// symmetric int32), offsets; one pass, slices in parallel, then the first error in
// (graph, z, y, x) order if there was one.
inline MincutGraph mincut3d_graph_cpu(const Mincut3dShape& s, const at::Tensor& source, const at::Tensor& sink,
                                      const at::Tensor& edges, const std::optional<at::Tensor>& reverse) {
  MincutGraph g;
  const at::Tensor src = source.contiguous(), snk = sink.contiguous(), edg = edges.contiguous();
  const at::Tensor rev = reverse.has_value() ? reverse->contiguous() : at::Tensor();
  const int64_t n = s.depth * s.height * s.width;
  g.net = at::empty({s.batch, s.depth, s.height, s.width}, source.options().dtype(at::kInt));
  const bool borrow = !s.asymmetric && source.scalar_type() == at::kInt;
  if (!borrow) g.nlinks = at::empty({s.batch, 3, s.depth, s.height, s.width}, source.options().dtype(at::kInt));
  at::Tensor slices = at::empty({s.batch * s.depth}, source.options().dtype(at::kLong));
  AT_DISPATCH_INDEX_TYPES(source.scalar_type(), "mincut_grid3d", [&] {
    const index_t* r = rev.defined() ? rev.data_ptr<index_t>() : nullptr;
    int32_t* nl = borrow ? nullptr : g.nlinks.data_ptr<int32_t>();
    // The pointers once: data_ptr checks the tensor on every call, which per voxel
    // cost as much as the reduction itself.
    const index_t* const sp = src.data_ptr<index_t>();
    const index_t* const tp = snk.data_ptr<index_t>();
    const index_t* const ep = edg.data_ptr<index_t>();
    int32_t* const net = g.net.data_ptr<int32_t>();
    int64_t* const slice_offset = slices.data_ptr<int64_t>();
    std::atomic<bool> ok{true};
    at::parallel_for(0, s.batch * s.depth, 1, [&](int64_t begin, int64_t end) {
      for (int64_t slice = begin; slice < end; ++slice) {
        const int64_t b = slice / s.depth, z = slice % s.depth;
        int64_t offset = 0;
        int bad = 0;
        for (int64_t y = 0; y < s.height; ++y) {
          for (int64_t x = 0; x < s.width; ++x) {
            bad |= detail::reduce_voxel<index_t>(s, sp, tp, ep, r, b, z, y, x, net, nl, offset, nullptr);
          }
        }
        slice_offset[slice] = offset;
        if (bad) ok.store(false, std::memory_order_relaxed);
      }
    });
    if (!ok.load()) {
      detail::throw_mincut_error(detail::find_first_error3d<index_t>(s, sp, tp, ep, r));
    }
  });
  g.offset = slices.view({s.batch, s.depth}).sum(1);
  g.divisor = s.asymmetric ? 2 : 1;
  g.keep = borrow ? edg : g.nlinks;
  const int32_t* base = g.keep.data_ptr<int32_t>();
  g.nlink_ptr.resize(static_cast<size_t>(3 * s.batch));
  for (int64_t b = 0; b < 3 * s.batch; ++b) g.nlink_ptr[static_cast<size_t>(b)] = base + b * n;
  return g;
}

}  // namespace torchgrabcut
