// The GPU max-flow's scans and its relaxation of a tile by one warp
// (csrc/cuda/maxflow_tile.h, the kernel's own code) on the CPU: a warp runs as 32 host
// threads in lockstep (every shuffle is a barrier at which each thread publishes its
// value, then reads its source's), and every result is compared with the same quantity
// computed one pixel (or arc) after another. CI has no GPU; the kernel around the
// relaxation is checked on the device by cuda_tests with GRABCUT_TEST_WARP=1.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>
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

// A warp of the GPU, its 32 threads run on as many host threads: run(f) calls f(lane)
// on all of them at once. Shuffles and votes as the GPU has them; here each is a
// barrier of all the threads, which every thread reaches together in the code under
// test.
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

TEST(TileScans, MinPlusScanMatchesRelaxingOnePixelAfterAnother) {
  std::mt19937 rng(5);
  check_min_plus<32, false>(rng);
  check_min_plus<32, true>(rng);
  check_min_plus<16, false>(rng);
  check_min_plus<16, true>(rng);
}

}  // namespace

// ---------------------------------------------------------------- a tile relaxed by a warp
namespace {

int padded(int lx, int ly) { return (ly + 1) * tile::kPadW + lx + 1; }

// A random tile whose grid ends at (w, h) in tile coordinates (inside the tile, or
// beyond it, so that its right and lower halo lie on the grid too): labels of the
// padded tile (kInf off the grid and at 15% of the others, sinks at 0) and each
// pixel's residual arcs (none towards pixels off the grid).
struct RandomTile {
  std::vector<int> h = std::vector<int>(tile::kPad);
  std::vector<std::uint8_t> arcs = std::vector<std::uint8_t>(tile::kThreads);

  RandomTile(std::mt19937& rng, int w, int hgt, double p_closed, int max_label) {
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::uniform_int_distribution<int> label(0, max_label);
    for (int i = 0; i < tile::kPad; ++i) {
      const int px = i % tile::kPadW - 1;
      const int py = i / tile::kPadW - 1;
      const bool on = px < w && py < hgt;  // the halo above and left lies in the grid too
      h[static_cast<std::size_t>(i)] = on ? (unit(rng) < 0.15 ? tile::kInf : label(rng)) : tile::kInf;
    }
    for (int i = 0; i < tile::kThreads; ++i) {
      const int lx = i % tile::kTileW;
      const int ly = i / tile::kTileW;
      unsigned int mask = 0;
      for (int k = 0; k < 8; ++k) {
        const bool target_on = lx + tile::dir_dx(k) < w && ly + tile::dir_dy(k) < hgt;
        if (lx < w && ly < hgt && target_on && unit(rng) >= p_closed) mask |= 1U << k;
      }
      arcs[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(mask);
    }
  }
};

// Bellman-Ford to the fixpoint, one arc at a time (sinks keep their 0).
std::vector<int> relax_reference(const RandomTile& t) {
  std::vector<int> h = t.h;
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < tile::kThreads; ++i) {
      const auto me = static_cast<std::size_t>(padded(i % tile::kTileW, i / tile::kTileW));
      for (int k = 0; k < 8; ++k) {
        if ((t.arcs[static_cast<std::size_t>(i)] >> k & 1U) == 0U) continue;
        const int step = tile::dir_dy(k) * tile::kPadW + tile::dir_dx(k);
        const auto nb = static_cast<std::size_t>(static_cast<int>(me) + step);
        if (h[nb] + 1 < h[me]) {
          h[me] = h[nb] + 1;
          changed = true;
        }
      }
    }
  }
  return h;
}

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

// relax_tile_warp on one emulated warp, lane x given column x of the tile; returns the
// labels of the padded tile after it and the rows each lane reported changed.
std::pair<std::vector<int>, std::vector<unsigned int>> relax_on_warp(const RandomTile& t) {
  std::vector<int> h = t.h;
  int side[2][tile::kPadH];
  for (int j = 0; j < tile::kPadH; ++j) {
    side[0][j] = h[static_cast<std::size_t>(padded(-1, j - 1))];
    side[1][j] = h[static_cast<std::size_t>(padded(tile::kTileW, j - 1))];
  }
  std::vector<unsigned int> changed(kWarp);
  Lockstep warp(kWarp);
  warp.run([&](int lane) {
    int d[tile::kTileH];
    unsigned int m[tile::kWarpTileWords] = {};
    for (int r = 0; r < tile::kTileH; ++r) {
      d[r] = h[static_cast<std::size_t>(padded(lane, r))];
      m[r / 4] |= static_cast<unsigned int>(t.arcs[static_cast<std::size_t>(r * tile::kTileW + lane)]) << (8 * (r % 4));
    }
    const int top = h[static_cast<std::size_t>(padded(lane, -1))];
    const int bottom = h[static_cast<std::size_t>(padded(lane, tile::kTileH))];
    changed[static_cast<std::size_t>(lane)] =
        tile::relax_tile_warp(d, m, top, bottom, side, lane, EmulatedWarp{&warp, lane});
    warp.sync();  // every lane has read the labels before any writes back
    for (int r = 0; r < tile::kTileH; ++r) h[static_cast<std::size_t>(padded(lane, r))] = d[r];
  });
  return {h, changed};
}

}  // namespace

TEST(TileRelaxation, WarpRelaxationReachesTheBellmanFordFixpoint) {
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
      const RandomTile t(rng, shape[0], shape[1], p_closed, max_label);
      const std::vector<int> expected = relax_reference(t);
      const auto [got, changed] = relax_on_warp(t);
      const std::string what = "case " + std::to_string(case_index++) + " (" + std::to_string(shape[0]) + "x" +
                               std::to_string(shape[1]) + ", closed " + std::to_string(p_closed) + ", labels " +
                               std::to_string(max_label) + ")";
      ASSERT_EQ(got, expected) << what;
      for (int lane = 0; lane < kWarp; ++lane) {
        for (int r = 0; r < tile::kTileH; ++r) {
          const auto i = static_cast<std::size_t>(padded(lane, r));
          ASSERT_EQ((changed[static_cast<std::size_t>(lane)] >> r & 1U) != 0U, got[i] < t.h[i])
              << what << " lane " << lane << " row " << r;
        }
      }
    }
  }
}
