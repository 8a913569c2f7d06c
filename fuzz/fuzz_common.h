// Helpers shared by the fuzz targets: a reader that turns the fuzzer's bytes into
// sizes, images, masks and numbers (every byte string is a valid input; reads past
// the end give zeros), a property check that traps, and an independent reference
// max-flow (Dinic) with its canonical cut.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "core/common.h"

namespace fuzz {

// A violated property: report it and stop with a signal libFuzzer records as a crash.
#define FUZZ_CHECK(cond)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      std::fprintf(stderr, "fuzz property violated: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::fflush(stderr);                                                                     \
      __builtin_trap();                                                                        \
    }                                                                                          \
  } while (false)

// Keeps the work per input bounded so that the fuzzer runs many inputs a second.
constexpr int kMaxPixels = 4096;

class Reader {
 public:
  Reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  bool empty() const { return pos_ >= size_; }
  std::size_t remaining() const { return pos_ < size_ ? size_ - pos_ : 0; }

  std::uint8_t u8() { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8U)); }
  std::uint32_t u32() {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(u8()) << (8U * static_cast<unsigned>(i));
    return v;
  }
  std::uint64_t u64() {
    const std::uint64_t lo = u32();
    return lo | (static_cast<std::uint64_t>(u32()) << 32U);
  }
  std::int32_t i32() {
    const std::uint32_t v = u32();
    std::int32_t r = 0;
    std::memcpy(&r, &v, sizeof r);
    return r;
  }
  // Any bit pattern: NaN, infinities, subnormals included.
  double raw_f64() {
    const std::uint64_t v = u64();
    double r = 0.0;
    std::memcpy(&r, &v, sizeof r);
    return r;
  }
  // 0..n-1 (n > 0).
  int below(int n) { return static_cast<int>(u16() % static_cast<unsigned>(n)); }
  bool flag() { return (u8() & 1U) != 0; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

// splitmix64 stream, for filling large arrays from a few input bytes.
class Stream {
 public:
  explicit Stream(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30U)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27U)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31U);
  }
  std::uint32_t below(std::uint32_t n) { return static_cast<std::uint32_t>(next() % n); }

 private:
  std::uint64_t state_;
};

struct Size {
  int h = 0;
  int w = 0;
  std::int64_t n() const { return static_cast<std::int64_t>(h) * w; }
};

// A grid size: empty ones (0 x 0, 0 x N, N x 0), 1 x 1, single rows and columns,
// small squares and rectangles up to max_pixels in all.
inline Size read_size(Reader& in, int max_pixels) {
  const int mode = in.u8() % 10;
  const int side = std::max(1, max_pixels);
  switch (mode) {
    case 0:
      return {0, in.below(8)};
    case 1:
      return {in.below(8), 0};
    case 2:
      return {1, 1};
    case 3:
      return {1, 1 + in.below(side)};
    case 4:
      return {1 + in.below(side), 1};
    case 5:
    case 6:
    case 7: {  // small: where the reference checks are cheapest
      const int h = 1 + in.below(12);
      const int w = 1 + in.below(12);
      return {h, w};
    }
    default: {  // anything up to max_pixels
      const int h = 1 + in.below(std::min(side, 128));
      const int w = 1 + in.below(std::max(1, side / h));
      return {h, w};
    }
  }
}

// A planar 3 x n uint8 image in one of several styles.
inline std::vector<std::uint8_t> read_image(Reader& in, std::int64_t n) {
  std::vector<std::uint8_t> img(static_cast<std::size_t>(3 * n));
  const int style = in.u8() % 7;
  if (style == 0) {  // raw bytes from the input
    for (auto& v : img) v = in.u8();
    return img;
  }
  Stream rng(in.u64());
  switch (style) {
    case 1: {  // one flat colour
      const std::uint8_t c[3] = {in.u8(), in.u8(), in.u8()};
      for (int ch = 0; ch < 3; ++ch) std::fill_n(img.begin() + ch * n, n, c[ch]);
      break;
    }
    case 2:  // extremes only: 0 and 255 per channel
      for (auto& v : img) v = (rng.next() & 1U) != 0 ? 255 : 0;
      break;
    case 3: {  // a small palette
      std::uint8_t pal[4][3];
      const int colors = 1 + in.u8() % 4;
      for (auto& row : pal)
        for (auto& v : row) v = in.u8();
      for (std::int64_t p = 0; p < n; ++p) {
        const std::uint32_t c = rng.below(static_cast<std::uint32_t>(colors));
        for (int ch = 0; ch < 3; ++ch) img[static_cast<std::size_t>(ch * n + p)] = pal[c][ch];
      }
      break;
    }
    case 4:  // gradient
      for (std::int64_t p = 0; p < n; ++p)
        for (int ch = 0; ch < 3; ++ch)
          img[static_cast<std::size_t>(ch * n + p)] = static_cast<std::uint8_t>((p * (ch + 1)) & 0xFF);
      break;
    default:  // noise
      for (auto& v : img) v = static_cast<std::uint8_t>(rng.next());
      break;
  }
  return img;
}

// A label mask (OpenCV labels 0 BGD, 1 FGD, 2 PR_BGD, 3 PR_FGD): uniform, random,
// from a box (outside background, inside probable foreground, as the Python layer
// builds it; the box may be empty, inverted or reach past the image), a box with
// hard strokes, or, with allow_invalid, raw bytes that may hold labels above 3.
inline std::vector<std::uint8_t> read_mask(Reader& in, int h, int w, bool allow_invalid) {
  const std::int64_t n = static_cast<std::int64_t>(h) * w;
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(n), 0);
  const int style = in.u8() % (allow_invalid ? 7 : 6);
  Stream rng(in.u64());
  switch (style) {
    case 0:
      std::fill(mask.begin(), mask.end(), static_cast<std::uint8_t>(in.u8() % 4));
      break;
    case 1:
      for (auto& v : mask) v = static_cast<std::uint8_t>(rng.next() % 4);
      break;
    case 2:
      for (auto& v : mask) v = static_cast<std::uint8_t>(in.u8() % 4);
      break;
    case 3:
    case 4: {
      // Half-open box (x0, y0, x1, y1), clipped like the Python layer clips it.
      const int x0 = static_cast<int>(static_cast<std::int8_t>(in.u8()));
      const int y0 = static_cast<int>(static_cast<std::int8_t>(in.u8()));
      const int x1 = x0 + in.u8();
      const int y1 = y0 + in.u8();
      for (int y = std::max(0, y0); y < std::min(h, y1); ++y)
        for (int x = std::max(0, x0); x < std::min(w, x1); ++x) mask[static_cast<std::size_t>(y) * w + x] = 3;
      if (style == 4 && n > 0) {  // hard strokes
        const int strokes = in.u8() % 8;
        for (int s = 0; s < strokes; ++s) {
          const auto p = static_cast<std::size_t>(rng.next() % static_cast<std::uint64_t>(n));
          const std::size_t len = 1 + in.u8() % 32;
          const auto label = static_cast<std::uint8_t>(in.u8() % 2);
          for (std::size_t i = p; i < std::min(static_cast<std::size_t>(n), p + len); ++i) mask[i] = label;
        }
      }
      break;
    }
    case 5:  // mostly probable, a few hard pixels
      for (auto& v : mask) {
        const std::uint64_t r = rng.next() % 64;
        v = static_cast<std::uint8_t>(r == 0 ? 0 : r == 1 ? 1 : 2 + (r & 1U));
      }
      break;
    default:  // raw bytes: any label value
      for (auto& v : mask) v = in.u8();
      break;
  }
  return mask;
}

// A model of 2k components from the input: raw doubles (any bit pattern) or
// structured extremes (zero weights, singular, indefinite, huge or tiny covariances).
inline std::vector<double> read_model(Reader& in, int k) {
  std::vector<double> model(static_cast<std::size_t>(2 * k * grabcut::kParamsPerComponent), 0.0);
  for (int j = 0; j < 2 * k; ++j) {
    double* p = model.data() + j * grabcut::kParamsPerComponent;
    const int style = in.u8() % 6;
    if (style == 0) {
      for (int i = 0; i < grabcut::kParamsPerComponent; ++i) p[i] = in.raw_f64();
      continue;
    }
    static constexpr double kScales[] = {0.0, 1e-300, 1e-16, 1e-3, 1.0, 100.0, 1e4, 1e16, 1e150, 1e300};
    constexpr int kNumScales = sizeof kScales / sizeof kScales[0];
    const double weight_choices[] = {0.0, -1.0, 1e-300, 0.2, 1.0, 1e300, in.raw_f64()};
    p[0] = weight_choices[in.u8() % 7];
    for (int i = 0; i < 3; ++i) p[1 + i] = style == 1 ? in.raw_f64() : static_cast<double>(in.u8()) + in.u8() / 256.0;
    double* c = p + 4;
    if (style == 2) {  // diagonal with scales
      for (int i = 0; i < 3; ++i) c[4 * i] = kScales[in.u8() % kNumScales];
    } else if (style == 3) {  // rank one: singular
      const double v[3] = {static_cast<double>(in.u8()), static_cast<double>(in.u8()), static_cast<double>(in.u8())};
      for (int r = 0; r < 3; ++r)
        for (int col = 0; col < 3; ++col) c[3 * r + col] = v[r] * v[col];
    } else if (style == 4) {  // A A^T + s I, A from the input (positive definite if s > 0)
      double a[9];
      for (double& v : a) v = static_cast<double>(static_cast<std::int8_t>(in.u8()));
      const double s = kScales[in.u8() % kNumScales];
      for (int r = 0; r < 3; ++r)
        for (int col = 0; col < 3; ++col) {
          double v = 0;
          for (int i = 0; i < 3; ++i) v += a[3 * r + i] * a[3 * col + i];
          c[3 * r + col] = v + (r == col ? s : 0.0);
        }
    } else {  // any entries, scaled
      const double s = kScales[in.u8() % kNumScales];
      for (int i = 0; i < 9; ++i) c[i] = s * static_cast<double>(static_cast<std::int8_t>(in.u8()));
    }
  }
  return model;
}

// ---- Independent reference max-flow: Dinic on an explicit adjacency list. ----

class Dinic {
 public:
  explicit Dinic(int nodes) : head_(static_cast<std::size_t>(nodes), -1), level_(head_.size()), it_(head_.size()) {}

  // Arc u -> v of capacity cap_uv and its reverse of capacity cap_vu (both >= 0).
  void add(int u, int v, std::int64_t cap_uv, std::int64_t cap_vu) {
    arcs_.push_back({v, head_[static_cast<std::size_t>(u)], cap_uv});
    head_[static_cast<std::size_t>(u)] = static_cast<int>(arcs_.size()) - 1;
    arcs_.push_back({u, head_[static_cast<std::size_t>(v)], cap_vu});
    head_[static_cast<std::size_t>(v)] = static_cast<int>(arcs_.size()) - 1;
  }

  std::int64_t max_flow(int s, int t) {
    std::int64_t total = 0;
    while (bfs(s, t)) {
      it_ = head_;
      for (;;) {
        const std::int64_t f = dfs(s, t, std::numeric_limits<std::int64_t>::max());
        if (f == 0) break;
        total += f;
      }
    }
    return total;
  }

  // After max_flow: 1 for every node that can reach t in the residual graph.
  std::vector<std::uint8_t> reaches(int t) const {
    std::vector<std::uint8_t> mark(head_.size(), 0);
    std::vector<int> stack = {t};
    mark[static_cast<std::size_t>(t)] = 1;
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      // Arc e leaves v; its partner e ^ 1 runs from arcs_[e].to into v.
      for (int e = head_[static_cast<std::size_t>(v)]; e >= 0; e = arcs_[static_cast<std::size_t>(e)].next) {
        const int u = arcs_[static_cast<std::size_t>(e)].to;
        if (mark[static_cast<std::size_t>(u)] == 0 && arcs_[static_cast<std::size_t>(e ^ 1)].cap > 0) {
          mark[static_cast<std::size_t>(u)] = 1;
          stack.push_back(u);
        }
      }
    }
    return mark;
  }

 private:
  struct Arc {
    int to;
    int next;
    std::int64_t cap;
  };

  bool bfs(int s, int t) {
    std::fill(level_.begin(), level_.end(), -1);
    std::vector<int> q = {s};
    level_[static_cast<std::size_t>(s)] = 0;
    for (std::size_t i = 0; i < q.size(); ++i) {
      const int v = q[i];
      for (int e = head_[static_cast<std::size_t>(v)]; e >= 0; e = arcs_[static_cast<std::size_t>(e)].next) {
        const Arc& a = arcs_[static_cast<std::size_t>(e)];
        if (a.cap > 0 && level_[static_cast<std::size_t>(a.to)] < 0) {
          level_[static_cast<std::size_t>(a.to)] = level_[static_cast<std::size_t>(v)] + 1;
          q.push_back(a.to);
        }
      }
    }
    return level_[static_cast<std::size_t>(t)] >= 0;
  }

  // Iterative blocking-flow step: one augmenting path in the level graph.
  std::int64_t dfs(int s, int t, std::int64_t limit) {
    std::vector<int> path;  // arcs
    int v = s;
    for (;;) {
      if (v == t) {
        std::int64_t f = limit;
        for (int e : path) f = std::min(f, arcs_[static_cast<std::size_t>(e)].cap);
        for (int e : path) {
          arcs_[static_cast<std::size_t>(e)].cap -= f;
          arcs_[static_cast<std::size_t>(e ^ 1)].cap += f;
        }
        return f;
      }
      int& e = it_[static_cast<std::size_t>(v)];
      while (e >= 0) {
        const Arc& a = arcs_[static_cast<std::size_t>(e)];
        if (a.cap > 0 && level_[static_cast<std::size_t>(a.to)] == level_[static_cast<std::size_t>(v)] + 1) break;
        e = a.next;
      }
      if (e >= 0) {
        path.push_back(e);
        v = arcs_[static_cast<std::size_t>(e)].to;
        continue;
      }
      // Dead end: retreat and skip the arc that led here.
      if (path.empty()) return 0;
      level_[static_cast<std::size_t>(v)] = -1;
      const int back = path.back();
      path.pop_back();
      v = arcs_[static_cast<std::size_t>(back ^ 1)].to;
      it_[static_cast<std::size_t>(v)] = arcs_[static_cast<std::size_t>(back)].next;
    }
  }

  std::vector<int> head_;
  std::vector<int> level_;
  std::vector<int> it_;
  std::vector<Arc> arcs_;
};

// Maximum flow of an 8-connected grid graph (the layout of core/maxflow.h: signed
// net terminals, forward n-links right, down-right, down, down-left; entries that
// point off the grid are ignored) and its canonical cut: 1 for the pixels that
// cannot reach the sink in the residual graph.
struct ReferenceCut {
  std::int64_t flow = 0;
  std::vector<std::uint8_t> source_side;
};

inline ReferenceCut reference_cut(int h, int w, const std::int32_t* terminal, const std::int32_t* const nlink[4]) {
  const int n = h * w;
  const int s = n;
  const int t = n + 1;
  Dinic g(n + 2);
  constexpr int kDy[4] = {0, 1, 1, 1};
  constexpr int kDx[4] = {1, 1, 0, -1};
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int p = y * w + x;
      const std::int64_t tp = terminal[p];
      if (tp > 0) g.add(s, p, tp, 0);
      if (tp < 0) g.add(p, t, -tp, 0);
      for (int d = 0; d < 4; ++d) {
        const int ny = y + kDy[d];
        const int nx = x + kDx[d];
        if (ny >= h || nx < 0 || nx >= w) continue;
        const std::int64_t c = nlink[d][p];
        if (c > 0) g.add(p, ny * w + nx, c, c);
      }
    }
  }
  ReferenceCut r;
  r.flow = g.max_flow(s, t);
  const std::vector<std::uint8_t> reach = g.reaches(t);
  r.source_side.resize(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) r.source_side[static_cast<std::size_t>(p)] = reach[static_cast<std::size_t>(p)] ^ 1U;
  return r;
}

}  // namespace fuzz
