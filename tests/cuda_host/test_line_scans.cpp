// The GPU max-flow's line scans (csrc/cuda/maxflow_tile.h) on the CPU: a warp's lanes
// run as threads in lockstep (every shuffle is a barrier at which each lane publishes
// its value, then reads its source lane's), and every scan is compared with the same
// quantity computed one pixel after another. CI has no GPU; this checks the scans'
// arithmetic and the lane mappings there (the kernel's use of them is checked on the
// device by cuda_tests with GRABCUT_TEST_LINES=1).
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "cuda/maxflow_tile.h"

namespace {

namespace tile = grabcut::cuda::tile;

constexpr int kWarp = 32;

// A reusable barrier for the lanes of one warp.
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

// One warp of 32 lanes; run(f) calls f(lane) on 32 threads at once.
class Warp {
 public:
  Warp() : barrier_(kWarp), slots_(kWarp) {}

  void run(const std::function<void(int)>& f) {
    std::vector<std::thread> lanes;
    lanes.reserve(kWarp);
    for (int lane = 0; lane < kWarp; ++lane) lanes.emplace_back(f, lane);
    for (auto& t : lanes) t.join();
  }

  // __shfl_up_sync / __shfl_down_sync with width n: the value of lane - off (up) or
  // lane + off (down) within the lane's group of n, else the lane's own value.
  long long exchange(int lane, long long v, int off, int n, bool down) {
    slots_[static_cast<std::size_t>(lane)] = v;
    barrier_.wait();
    const int group = lane / n * n;
    const int src = down ? lane + off : lane - off;
    const long long got = (src >= group && src < group + n) ? slots_[static_cast<std::size_t>(src)] : v;
    barrier_.wait();  // every lane has read before the next exchange writes
    return got;
  }

 private:
  Barrier barrier_;
  std::vector<long long> slots_;
};

template <int N, bool Down>
struct LaneShuffle {
  Warp* warp;
  int lane;
  template <class T>
  T operator()(T v, int off) const {
    return static_cast<T>(warp->exchange(lane, static_cast<long long>(v), off, N, Down));
  }
};

// The pixel positions of a line in scan order (towards lower positions for Down
// false: a value moves from position j to j + 1), by lane within a group of n.
template <int N, bool Down>
std::vector<int> scan_min_plus_on_warp(const std::vector<int>& d, const std::vector<bool>& open) {
  Warp warp;
  std::vector<int> out(kWarp);
  warp.run([&](int lane) {
    const LaneShuffle<N, Down> shfl{&warp, lane};
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
    Warp warp;
    std::vector<long long> out(kWarp);
    std::vector<long long> in(kWarp);
    warp.run([&](int lane) {
      const LaneShuffle<N, Down> shfl{&warp, lane};
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
