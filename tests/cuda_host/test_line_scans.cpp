// The GPU max-flow's line scans and tile passes (csrc/cuda/maxflow_tile.h, the
// kernel's own code) on the CPU: a warp or a whole block runs as host threads in
// lockstep (every shuffle is a barrier at which each thread publishes its value, then
// reads its source's), and every result is compared with the same quantity computed
// one pixel after another. CI has no GPU; the kernel around these passes is checked
// on the device by cuda_tests with GRABCUT_TEST_LINES=1.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/maxflow_tile.h"

namespace {

namespace tile = grabcut::cuda::tile;

constexpr int kWarp = 32;

// A reusable barrier for the threads of one Lockstep.
class Barrier {
 public:
  explicit Barrier(int count) : count_(count) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const long long gen = generation_;
    if (++arrived_ == count_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != gen; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int count_;
  int arrived_ = 0;
  long long generation_ = 0;
};

// A warp (32 threads) or a block (kThreads) of the GPU, its threads run on as many
// host threads: run(f) calls f(tid) on all of them at once. Shuffles, barriers and
// shared-memory atomics as the GPU has them. Here a shuffle is a barrier of all the
// threads (on the GPU, of a warp's), which every thread reaches together in the code
// under test; so in a tile pass all inbox exchanges happen before any of the pass's
// pushes land, the order the sequential references below use (on the GPU a push may
// land before a slower warp's exchange and be taken a pass early, which changes no
// invariant).
class Lockstep {
 public:
  explicit Lockstep(int threads) : threads_(threads), barrier_(threads), slots_(threads), flags_(threads) {}

  void run(const std::function<void(int)>& f) {
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(threads_));
    for (int tid = 0; tid < threads_; ++tid) threads.emplace_back(f, tid);
    for (auto& t : threads) t.join();
  }
  void sync() { barrier_.wait(); }
  bool sync_or(int tid, bool v) {
    flags_[static_cast<std::size_t>(tid)] = v ? 1 : 0;
    barrier_.wait();
    const bool any = std::any_of(flags_.begin(), flags_.end(), [](char c) { return c != 0; });
    barrier_.wait();
    return any;
  }
  long long exchange(long long* p, long long v) {
    const std::lock_guard<std::mutex> lock(atomics_);
    const long long old = *p;
    *p = v;
    return old;
  }
  void add(long long* p, long long v) {
    const std::lock_guard<std::mutex> lock(atomics_);
    *p += v;
  }
  // __shfl_up_sync / __shfl_down_sync with width n: the value of tid - off (up) or
  // tid + off (down) within the thread's group of n, else the thread's own value.
  long long shuffle(int tid, long long v, int off, int n, bool down) {
    slots_[static_cast<std::size_t>(tid)] = v;
    barrier_.wait();
    const int group = tid / n * n;
    const int src = down ? tid + off : tid - off;
    const long long got = (src >= group && src < group + n) ? slots_[static_cast<std::size_t>(src)] : v;
    barrier_.wait();  // every thread has read before the next shuffle writes
    return got;
  }

 private:
  int threads_;
  Barrier barrier_;
  std::mutex atomics_;
  std::vector<long long> slots_;
  std::vector<char> flags_;
};

// The Shuffle argument of the scans, for thread tid of a Lockstep.
template <int N, bool Down>
struct LockstepShuffle {
  Lockstep* threads;
  int tid;
  template <class T>
  T operator()(T v, int off) const {
    return static_cast<T>(threads->shuffle(tid, static_cast<long long>(v), off, N, Down));
  }
};

// scan_min_plus on a warp, lane i holding d[i] and open[i] (groups of N lanes).
template <int N, bool Down>
std::vector<int> scan_min_plus_on_warp(const std::vector<int>& d, const std::vector<bool>& open) {
  Lockstep warp(kWarp);
  std::vector<int> out(kWarp);
  warp.run([&](int lane) {
    const LockstepShuffle<N, Down> shfl{&warp, lane};
    out[static_cast<std::size_t>(lane)] =
        tile::scan_min_plus<N, Down>(d[static_cast<std::size_t>(lane)], open[static_cast<std::size_t>(lane)], lane % N,
                                     shfl);
  });
  return out;
}

// One pixel after another: position i takes d_j + |i - j| from every j it reaches
// over open links (open[i]: the link from i to i - 1, or to i + 1 with down).
std::vector<int> min_plus_reference(const std::vector<int>& d, const std::vector<bool>& open, int n, bool down) {
  std::vector<int> out(d.size());
  for (int i = 0; i < static_cast<int>(d.size()); ++i) {
    const int group = i / n * n;
    int best = d[static_cast<std::size_t>(i)];
    int j = i;
    int steps = 0;
    while (open[static_cast<std::size_t>(j)]) {
      const int next = down ? j + 1 : j - 1;
      if (next < group || next >= group + n) break;
      j = next;
      ++steps;
      best = std::min(best, d[static_cast<std::size_t>(j)] + steps);
    }
    out[static_cast<std::size_t>(i)] = std::min(best, tile::kInf);
  }
  return out;
}

template <int N, bool Down>
void check_min_plus(std::mt19937& rng) {
  std::uniform_int_distribution<int> label(0, 60);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int trial = 0; trial < 40; ++trial) {
    const double p_open = trial % 4 == 0 ? 1.0 : 0.75;
    const double p_inf = trial % 5 == 0 ? 0.9 : 0.3;
    std::vector<int> d(kWarp);
    std::vector<bool> open(kWarp);
    for (int i = 0; i < kWarp; ++i) {
      d[static_cast<std::size_t>(i)] = unit(rng) < p_inf ? tile::kInf : label(rng);
      const bool at_end = Down ? i % N == N - 1 : i % N == 0;  // a line's end links to the halo only
      open[static_cast<std::size_t>(i)] = !at_end && unit(rng) < p_open;
    }
    const std::vector<int> got = scan_min_plus_on_warp<N, Down>(d, open);
    EXPECT_EQ(got, min_plus_reference(d, open, N, Down)) << "N " << N << " down " << Down << " trial " << trial;
  }
}

TEST(LineScans, MinPlusScanMatchesRelaxingOnePixelAfterAnother) {
  std::mt19937 rng(5);
  check_min_plus<32, false>(rng);
  check_min_plus<32, true>(rng);
  check_min_plus<16, false>(rng);
  check_min_plus<16, true>(rng);
}

TEST(LineScans, ClampedShiftsCompose) {
  std::mt19937 rng(6);
  std::uniform_int_distribution<long long> shift(-5000, 5000);
  std::uniform_int_distribution<unsigned int> bound(0, 6000);
  for (int trial = 0; trial < 20000; ++trial) {
    const auto make = [&] {
      unsigned int a = bound(rng);
      unsigned int b = bound(rng);
      if (a > b) std::swap(a, b);
      return tile::ClampedShift{shift(rng), a, b};
    };
    const tile::ClampedShift f = make();
    const tile::ClampedShift g = make();
    const long long c = shift(rng);
    const tile::ClampedShift gf = tile::compose(g, f);
    ASSERT_LE(gf.lo, gf.hi);
    ASSERT_EQ(tile::apply(gf, c), tile::apply(g, tile::apply(f, c))) << "trial " << trial;
  }
}

// Excess carried along lines of n lanes: what each pixel passes on and receives.
template <int N, bool Down>
void check_carry(std::mt19937& rng, long long excess_scale) {
  std::uniform_int_distribution<long long> excess(-excess_scale, excess_scale);
  std::uniform_int_distribution<unsigned int> cap(1, 0xfffffffeU);
  std::uniform_int_distribution<unsigned int> small_cap(1, 200);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<tile::ClampedShift> f(kWarp);
    for (auto& fi : f) {
      const double u = unit(rng);
      const unsigned int hi = u < 0.2 ? 0U : (u < 0.6 ? small_cap(rng) : cap(rng));
      fi = {excess(rng), 0U, hi};
    }
    Lockstep warp(kWarp);
    std::vector<long long> out(kWarp);
    std::vector<long long> in(kWarp);
    warp.run([&](int lane) {
      const LockstepShuffle<N, Down> shfl{&warp, lane};
      const auto i = static_cast<std::size_t>(lane);
      out[i] = tile::scan_carry<N, Down>(f[i], lane % N, shfl, in[i]);
    });
    for (int g = 0; g < kWarp; g += N) {
      long long c = 0;
      for (int s = 0; s < N; ++s) {
        const auto i = static_cast<std::size_t>(Down ? g + N - 1 - s : g + s);
        EXPECT_EQ(in[i], c) << "N " << N << " down " << Down << " trial " << trial << " lane " << i;
        c = tile::apply(f[i], c);
        EXPECT_EQ(out[i], c) << "N " << N << " down " << Down << " trial " << trial << " lane " << i;
        EXPECT_GE(out[i], 0);
        EXPECT_LE(out[i], static_cast<long long>(f[i].hi));
      }
    }
  }
}

TEST(LineScans, CarryScanMatchesPushingOnePixelAfterAnother) {
  std::mt19937 rng(7);
  for (const long long scale : {100LL, 1LL << 40}) {
    check_carry<32, false>(rng, scale);
    check_carry<32, true>(rng, scale);
    check_carry<16, false>(rng, scale);
    check_carry<16, true>(rng, scale);
  }
}

// Every orientation holds each pixel of the tile once; neighbouring lanes of a line
// piece hold neighbouring pixels along its direction; a piece's ends are next to the
// halo, and no other position is.
TEST(LineScans, LineSlotsCoverTheTileInLinePieces) {
  for (int o = 0; o < 4; ++o) {
    const int n = tile::line_lanes(o);
    const int k = tile::line_dir(o);
    const int dx = tile::dir_dx(k);
    const int dy = tile::dir_dy(k);
    std::set<std::pair<int, int>> seen;
    for (int tid = 0; tid < tile::kThreads; ++tid) {
      const tile::LineSlot s = tile::line_slot(o, tid);
      SCOPED_TRACE("orientation " + std::to_string(o) + " thread " + std::to_string(tid));
      ASSERT_TRUE(s.lx >= 0 && s.lx < tile::kTileW && s.ly >= 0 && s.ly < tile::kTileH);
      EXPECT_TRUE(seen.insert({s.lx, s.ly}).second);
      EXPECT_EQ(s.pos, tid % n);
      const auto inside = [](int x, int y) { return x >= 0 && x < tile::kTileW && y >= 0 && y < tile::kTileH; };
      EXPECT_EQ(s.first, !inside(s.lx - dx, s.ly - dy));
      EXPECT_EQ(s.last, !inside(s.lx + dx, s.ly + dy));
      if (!s.last) {
        ASSERT_LT(s.pos, n - 1);  // the next pixel is the next lane of the group
        const tile::LineSlot next = tile::line_slot(o, tid + 1);
        EXPECT_EQ(next.lx, s.lx + dx);
        EXPECT_EQ(next.ly, s.ly + dy);
      }
      if (s.pos == n - 1) {
        EXPECT_TRUE(s.last);
      }
      if (s.pos == 0) {
        EXPECT_TRUE(s.first);
      }
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(tile::kThreads));
  }
}

}  // namespace

// ---------------------------------------------------------------- whole tile passes
namespace {

// The shared arrays the tile passes use (the kernel's Shared has these and more).
struct TileShared {
  int h[2][tile::kPad];
  long long e[tile::kPad];
  long long ex[tile::kThreads];
  unsigned int res[8][tile::kThreads];
  std::uint8_t scan_mask[tile::kThreads];
};

// The block operations of maxflow_tile.h for thread tid of an emulated block.
struct EmulatedOps {
  Lockstep* block;
  int tid;
  void sync() const { block->sync(); }
  bool sync_or(bool v) const { return block->sync_or(tid, v); }
  long long exchange(long long* p, long long v) const { return block->exchange(p, v); }
  void add(long long* p, long long v) const { block->add(p, v); }
  template <int N, bool Down>
  LockstepShuffle<N, Down> shuffle() const {
    return {block, tid};
  }
};

int padded(int lx, int ly) { return (ly + 1) * tile::kPadW + lx + 1; }
int nb_padded(int i, int k) {
  return padded(i % tile::kTileW, i / tile::kTileW) + tile::dir_dy(k) * tile::kPadW + tile::dir_dx(k);
}
bool in_tile(int lx, int ly) { return lx >= 0 && lx < tile::kTileW && ly >= 0 && ly < tile::kTileH; }

// A random tile whose grid ends at (w, h) in tile coordinates (inside the tile, or
// beyond it, so that its right and lower halo lie on the grid too): residuals (0
// towards pixels off the grid), labels of the padded tile (kInf off the grid),
// excesses, scan masks.
struct RandomTile {
  int w, h;
  std::unique_ptr<TileShared> sh = std::make_unique<TileShared>();

  RandomTile(std::mt19937& rng, int w_, int h_, double p_closed, int max_label) : w(w_), h(h_) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::uniform_int_distribution<int> label(0, max_label);
    std::uniform_int_distribution<unsigned int> residual(1, 50);
    std::uniform_int_distribution<long long> excess(-60, 120);
    TileShared& s = *sh;
    for (int i = 0; i < tile::kPad; ++i) {
      const int px = i % tile::kPadW - 1;
      const int py = i / tile::kPadW - 1;
      const bool on = px < w && py < h;  // the halo above and left lies in the grid too
      const int v = on ? (unit(rng) < 0.15 ? tile::kInf : label(rng)) : tile::kInf;
      s.h[0][i] = v;
      s.h[1][i] = v;
      s.e[i] = 0;
    }
    for (int i = 0; i < tile::kThreads; ++i) {
      const int lx = i % tile::kTileW;
      const int ly = i / tile::kTileW;
      const bool valid = lx < w && ly < h;
      s.ex[i] = valid ? excess(rng) : 0;
      unsigned int mask = 0;
      for (int k = 0; k < 8; ++k) {
        const int nx = lx + tile::dir_dx(k);
        const int ny = ly + tile::dir_dy(k);
        const bool target_on = nx < w && ny < h;
        s.res[k][i] = valid && target_on && unit(rng) >= p_closed ? residual(rng) : 0U;
        if (s.res[k][i] != 0U) mask |= 1U << k;
      }
      s.scan_mask[i] = static_cast<std::uint8_t>(valid && s.h[0][padded(lx, ly)] != 0 ? mask : 0U);
    }
  }
  bool inside(int lx, int ly) const { return lx < w && ly < h; }
};

// Bellman-Ford to the fixpoint, one arc at a time.
void relax_reference(TileShared& s) {
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < tile::kThreads; ++i) {
      const int me = padded(i % tile::kTileW, i / tile::kTileW);
      for (int k = 0; k < 8; ++k) {
        if ((s.scan_mask[i] >> k & 1U) == 0U) continue;
        const int d = s.h[0][nb_padded(i, k)] + 1;
        if (d < s.h[0][me]) {
          s.h[0][me] = d;
          changed = true;
        }
      }
    }
  }
}

// The rounds of push_line_rounds, one pixel after another: a pass takes every inbox,
// carries excess along each line in order, then pushes to the diagonals ahead, whose
// amounts land in the inboxes.
int push_reference(TileShared& s, const RandomTile& t, int local_rounds) {
  int round = 0;
  for (int par = 0; round < local_rounds; ++round, par ^= 1) {
    for (int pass = 0; pass < 4; ++pass) {
      const int o = pass / 2;
      const bool reverse = (pass & 1) != 0;
      const int k = reverse ? tile::line_dir(o) ^ 4 : tile::line_dir(o);
      for (int i = 0; i < tile::kThreads; ++i) {
        s.ex[i] += s.e[padded(i % tile::kTileW, i / tile::kTileW)];
        s.e[padded(i % tile::kTileW, i / tile::kTileW)] = 0;
      }
      const int lines = o == 0 ? tile::kTileH : tile::kTileW;
      const int len = o == 0 ? tile::kTileW : tile::kTileH;
      for (int l = 0; l < lines; ++l) {
        long long c = 0;
        for (int st = 0; st < len; ++st) {
          const int along = reverse ? len - 1 - st : st;
          const int lx = o == 0 ? along : l;
          const int ly = o == 0 ? l : along;
          const int i = ly * tile::kTileW + lx;
          const int me = padded(lx, ly);
          const int hm = s.h[par][me];
          const unsigned int r = s.res[k][i];
          const bool can = t.inside(lx, ly) && hm < tile::kInf && r != 0U && s.h[par][nb_padded(i, k)] < hm;
          const long long x = s.ex[i] + c;
          const long long out = can ? std::clamp<long long>(x, 0, r) : 0;
          if (c != 0) s.res[k ^ 4][i] += static_cast<unsigned int>(c);
          s.res[k][i] -= static_cast<unsigned int>(out);
          s.ex[i] = x - out;
          c = out;
          if (st == len - 1) s.e[nb_padded(i, k)] += out;
        }
      }
      const int a = (k + 1) & 7;
      const int b = (k + 7) & 7;
      for (int i = 0; i < tile::kThreads; ++i) {
        const int lx = i % tile::kTileW;
        const int ly = i / tile::kTileW;
        const int hm = s.h[par][padded(lx, ly)];
        if (!t.inside(lx, ly) || hm >= tile::kInf) continue;
        for (const int kd : {std::min(a, b), std::max(a, b)}) {
          const unsigned int rd = s.res[kd][i];
          if (s.ex[i] <= 0 || rd == 0U || s.h[par][nb_padded(i, kd)] >= hm) continue;
          const long long amount = std::min<long long>(s.ex[i], rd);
          s.res[kd][i] -= static_cast<unsigned int>(amount);
          if (in_tile(lx + tile::dir_dx(kd), ly + tile::dir_dy(kd))) {
            s.res[kd ^ 4][(ly + tile::dir_dy(kd)) * tile::kTileW + lx + tile::dir_dx(kd)] +=
                static_cast<unsigned int>(amount);
          }
          s.e[nb_padded(i, kd)] += amount;
          s.ex[i] -= amount;
        }
      }
    }
    bool still = false;
    std::vector<int> next(tile::kThreads);
    for (int i = 0; i < tile::kThreads; ++i) {
      const int me = padded(i % tile::kTileW, i / tile::kTileW);
      s.ex[i] += s.e[me];
      s.e[me] = 0;
      int hm = s.h[par][me];
      if (t.inside(i % tile::kTileW, i / tile::kTileW) && s.ex[i] > 0 && hm < tile::kInf) {
        int m = tile::kInf;
        for (int k = 0; k < 8; ++k) {
          if (s.res[k][i] != 0U) m = std::min(m, s.h[par][nb_padded(i, k)]);
        }
        if (m >= hm) hm = m >= tile::kInf - 1 ? tile::kInf : m + 1;
        still = still || hm < tile::kInf;
      }
      next[static_cast<std::size_t>(i)] = hm;
    }
    for (int i = 0; i < tile::kThreads; ++i) {
      s.h[par ^ 1][padded(i % tile::kTileW, i / tile::kTileW)] = next[static_cast<std::size_t>(i)];
    }
    if (!still) break;
  }
  return round;
}

}  // namespace

TEST(TilePasses, LineRelaxationReachesTheBellmanFordFixpoint) {
  std::mt19937 rng(8);
  // Each case costs seconds: every shuffle is a barrier of 512 threads.
  const int shapes[][2] = {{99, 99}, {7, 13}};
  for (std::size_t c = 0; c < std::size(shapes); ++c) {
    RandomTile t(rng, shapes[c][0], shapes[c][1], 0.3, 40);
    TileShared expected = *t.sh;
    relax_reference(expected);
    Lockstep block(tile::kThreads);
    TileShared& s = *t.sh;
    block.run([&](int tid) { tile::relax_tile_lines(s, tid, EmulatedOps{&block, tid}); });
    for (int i = 0; i < tile::kPad; ++i) ASSERT_EQ(s.h[0][i], expected.h[0][i]) << "case " << c << " slot " << i;
  }
}

namespace {

// The warp operations of relax_tile_warp for lane `lane` of an emulated warp.
struct EmulatedWarp {
  Lockstep* warp;
  int lane;
  bool any(bool v) const { return warp->sync_or(lane, v); }
  template <int N, bool Down>
  LockstepShuffle<N, Down> shuffle() const {
    return {warp, lane};
  }
};

// relax_tile_warp on one emulated warp, lane x given column x of the tile (its arcs
// from the residuals, sinks' included); returns the rows each lane reported changed.
std::vector<unsigned int> relax_on_warp(TileShared& s) {
  int side[2][tile::kPadH];
  for (int j = 0; j < tile::kPadH; ++j) {
    side[0][j] = s.h[0][padded(-1, j - 1)];
    side[1][j] = s.h[0][padded(tile::kTileW, j - 1)];
  }
  std::vector<unsigned int> changed(kWarp);
  Lockstep warp(kWarp);
  warp.run([&](int lane) {
    int d[tile::kTileH];
    unsigned int m[tile::kWarpTileWords] = {};
    for (int r = 0; r < tile::kTileH; ++r) {
      d[r] = s.h[0][padded(lane, r)];
      for (int k = 0; k < 8; ++k) {
        if (s.res[k][r * tile::kTileW + lane] != 0U) m[r / 4] |= 1U << (8 * (r % 4) + k);
      }
    }
    const int top = s.h[0][padded(lane, -1)];
    const int bottom = s.h[0][padded(lane, tile::kTileH)];
    changed[static_cast<std::size_t>(lane)] = tile::relax_tile_warp(d, m, top, bottom, side, lane, EmulatedWarp{&warp, lane});
    warp.sync();  // every lane has read the labels before any writes back
    for (int r = 0; r < tile::kTileH; ++r) s.h[0][padded(lane, r)] = d[r];
  });
  return changed;
}

}  // namespace

TEST(TilePasses, WarpRelaxationReachesTheBellmanFordFixpoint) {
  std::mt19937 rng(10);
  // Whole tiles and tiles cut by the grid's edge; open and sparse residual arcs; few
  // and many distinct labels (labels reach across the tile, or stop at closed arcs).
  // (Each case takes ~0.4 s: every shuffle is a barrier of 32 threads.)
  const int shapes[][2] = {{99, 99}, {7, 13}, {1, 16}, {32, 1}};
  const int label_scales[] = {3, 40, 1000};
  int case_index = 0;
  for (const auto& shape : shapes) {
    for (const double p_closed : {0.0, 0.3, 0.7}) {
      const int max_label = label_scales[case_index % 3];
      RandomTile t(rng, shape[0], shape[1], p_closed, max_label);
      TileShared expected = *t.sh;
      relax_reference(expected);
      const TileShared before = *t.sh;
      const std::vector<unsigned int> changed = relax_on_warp(*t.sh);
      const std::string what = "case " + std::to_string(case_index++) + " (" + std::to_string(shape[0]) + "x" +
                               std::to_string(shape[1]) + ", closed " + std::to_string(p_closed) + ", labels " +
                               std::to_string(max_label) + ")";
      for (int i = 0; i < tile::kPad; ++i) ASSERT_EQ(t.sh->h[0][i], expected.h[0][i]) << what << " slot " << i;
      for (int lane = 0; lane < kWarp; ++lane) {
        for (int r = 0; r < tile::kTileH; ++r) {
          const bool lower = t.sh->h[0][padded(lane, r)] < before.h[0][padded(lane, r)];
          ASSERT_EQ((changed[static_cast<std::size_t>(lane)] >> r & 1U) != 0U, lower) << what << " " << lane << "," << r;
        }
      }
    }
  }
}

TEST(TilePasses, LinePushRoundsMatchPushingOnePixelAfterAnother) {
  std::mt19937 rng(9);
  const int shapes[][2] = {{99, 99}, {20, 11}};
  for (std::size_t c = 0; c < std::size(shapes); ++c) {
    for (const int rounds : {c == 0 ? 6 : 2}) {
      RandomTile t(rng, shapes[c][0], shapes[c][1], c == 0 ? 0.2 : 0.4, 12);
      TileShared expected = *t.sh;
      const int expected_round = push_reference(expected, t, rounds);
      Lockstep block(tile::kThreads);
      TileShared& s = *t.sh;
      std::vector<long long> ex(tile::kThreads);
      std::vector<int> hm(tile::kThreads);
      std::vector<int> round(tile::kThreads);
      block.run([&](int tid) {
        const int lx = tid % tile::kTileW;
        const int ly = tid / tile::kTileW;
        long long my_ex = s.ex[tid];
        int my_hm = s.h[0][padded(lx, ly)];
        round[static_cast<std::size_t>(tid)] = tile::push_line_rounds(
            s, rounds, t.inside(lx, ly), [&](int px, int py) { return t.inside(px, py); }, tid,
            EmulatedOps{&block, tid}, my_ex, my_hm);
        ex[static_cast<std::size_t>(tid)] = my_ex;
        hm[static_cast<std::size_t>(tid)] = my_hm;
      });
      const std::string what = "case " + std::to_string(c) + " rounds " + std::to_string(rounds);
      const int last = expected_round == rounds ? rounds - 1 : expected_round;
      const int final_par = (last & 1) ^ 1;
      for (int i = 0; i < tile::kThreads; ++i) {
        const auto ui = static_cast<std::size_t>(i);
        ASSERT_EQ(round[ui], expected_round) << what;
        ASSERT_EQ(ex[ui], expected.ex[i]) << what << " pixel " << i;
        ASSERT_EQ(hm[ui], expected.h[final_par][padded(i % tile::kTileW, i / tile::kTileW)]) << what << " pixel " << i;
        for (int k = 0; k < 8; ++k) ASSERT_EQ(s.res[k][i], expected.res[k][i]) << what << " pixel " << i << " dir " << k;
      }
      for (int i = 0; i < tile::kPad; ++i) ASSERT_EQ(s.e[i], expected.e[i]) << what << " inbox " << i;
    }
  }
}
