// The CPU batch (core/batch.h): the schedule, the run (every image once, on the
// threads the schedule gives it, errors kept per image, stops between images), and
// grabcut_cpu_batch against grabcut_cpu one image at a time.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <new>
#include <random>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/batch.h"
#include "core/gmm.h"

namespace grabcut {
namespace {

TEST(BatchSchedule, MostWorkFirstAndWideImagesFirstOfAll) {
  // 60 of 100 is more than one thread's share of two: it runs first, on both.
  BatchSchedule s = schedule_batch({10, 60, 20, 10}, 2);
  EXPECT_EQ(s.order, (std::vector<int>{1, 2, 0, 3}));  // equal work keeps batch order
  EXPECT_EQ(s.wide, 1U);
  // Exactly one share is not more than one: nothing is wide.
  EXPECT_EQ(schedule_batch({50, 50}, 2).wide, 0U);
  // One thread: nothing is wide, and an empty batch has an empty schedule.
  EXPECT_EQ(schedule_batch({10, 60, 20, 10}, 1).wide, 0U);
  EXPECT_TRUE(schedule_batch({}, 4).order.empty());
  // Three threads: 40 and 35 of 100 are each more than a third.
  EXPECT_EQ(schedule_batch({5, 40, 35, 20}, 3).wide, 2U);
}

TEST(BatchSchedule, WorkIsProbablePixelsPlusASixteenthOfAll) {
  std::vector<std::uint8_t> mask(64, kBackground);
  std::fill(mask.begin(), mask.begin() + 10, kProbForeground);
  std::fill(mask.begin() + 10, mask.begin() + 15, kProbBackground);
  std::fill(mask.begin() + 15, mask.begin() + 20, kForeground);
  EXPECT_EQ(image_work(mask.data(), 8, 8), 15 + 64 / 16);
}

// Runs a schedule with a recording run_image; returns (image, threads) in start order.
std::vector<std::pair<int, int>> record_run(const BatchSchedule& s, int threads, BatchOutcome* outcome = nullptr,
                                            const StopRequested& stop = {}) {
  std::mutex m;
  std::vector<std::pair<int, int>> seen;
  const BatchOutcome out = run_batch(
      s, threads,
      [&](int b, int t) {
        const std::lock_guard<std::mutex> lock(m);
        seen.emplace_back(b, t);
      },
      stop);
  if (outcome != nullptr) *outcome = out;
  return seen;
}

TEST(RunBatch, EveryImageOnceWideOnesFirstOnEveryThread) {
  const BatchSchedule s = schedule_batch({10, 60, 20, 10}, 3);
  const auto seen = record_run(s, 3);
  ASSERT_EQ(seen.size(), 4U);
  EXPECT_EQ(seen[0], std::make_pair(1, 3));
  std::vector<int> rest;
  for (size_t i = 1; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].second, 1);
    rest.push_back(seen[i].first);
  }
  std::sort(rest.begin(), rest.end());
  EXPECT_EQ(rest, (std::vector<int>{0, 2, 3}));
}

TEST(RunBatch, ErrorsAndOutOfMemoryAreKeptPerImageAndTheOthersRun) {
  const BatchSchedule s = schedule_batch({1, 1, 1, 1}, 2);
  std::vector<char> ran(4, 0);
  const BatchOutcome out = run_batch(s, 2, [&](int b, int) {
    ran[static_cast<size_t>(b)] = 1;
    if (b == 1) throw std::invalid_argument("bad mask");
    if (b == 2) throw std::bad_alloc();
  });
  EXPECT_EQ(ran, (std::vector<char>{1, 1, 1, 1}));
  EXPECT_EQ(out.errors, (std::vector<std::string>{"", "bad mask", "", ""}));
  EXPECT_EQ(out.out_of_memory, (std::vector<char>{0, 0, 1, 0}));
  EXPECT_FALSE(out.stopped);
}

TEST(RunBatch, AStopEndsTheBatchAfterTheImagesInProgress) {
  for (const std::vector<std::int64_t>& work : {std::vector<std::int64_t>{1, 1, 1, 1}, {1, 90, 1, 1}}) {
    BatchOutcome out;
    const auto seen = record_run(schedule_batch(work, 2), 2, &out, [] { return true; });
    // The first image always runs (a single image is never stopped); no other starts.
    ASSERT_EQ(seen.size(), 1U);
    EXPECT_TRUE(out.stopped);
  }
  BatchOutcome out;
  EXPECT_EQ(record_run(schedule_batch({1, 1, 1}, 2), 2, &out, [] { return false; }).size(), 3U);
  EXPECT_FALSE(out.stopped);
}

struct Scene {
  int h = 0;
  int w = 0;
  std::vector<std::uint8_t> image;  // planar
  std::vector<std::uint8_t> mask;
  std::vector<double> model;
};

// A noisy bright rectangle on a dark background, the box mask a margin around it.
Scene make_scene(int h, int w, unsigned seed) {
  Scene s;
  s.h = h;
  s.w = w;
  const std::int64_t n = static_cast<std::int64_t>(h) * w;
  s.image.resize(static_cast<size_t>(3 * n));
  s.mask.assign(static_cast<size_t>(n), kBackground);
  s.model.assign(static_cast<size_t>(2 * kDefaultComponents * kParamsPerComponent), 0.0);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> noise(0, 40);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const bool inside = y > h / 4 && y < 3 * h / 4 && x > w / 4 && x < 3 * w / 4;
      for (int c = 0; c < 3; ++c) {
        s.image[static_cast<size_t>(c * n + y * w + x)] = static_cast<std::uint8_t>((inside ? 180 : 30) + noise(rng));
      }
      if (y > h / 8 && y < 7 * h / 8 && x > w / 8 && x < 7 * w / 8)
        s.mask[static_cast<size_t>(y * w + x)] = kProbForeground;
    }
  }
  return s;
}

std::vector<CpuImage> items_of(std::vector<Scene>& scenes) {
  std::vector<CpuImage> items;
  for (Scene& s : scenes) items.push_back({s.image.data(), s.h, s.w, s.mask.data(), s.model.data()});
  return items;
}

TEST(GrabCutCpuBatch, EqualsEachImageAloneAndKeepsEachImagesError) {
  std::vector<Scene> scenes = {make_scene(40, 60, 1), make_scene(90, 70, 2), make_scene(20, 25, 3)};
  std::vector<Scene> alone = scenes;
  scenes.push_back(make_scene(10, 10, 4));
  scenes.back().mask[3] = 9;  // not a label: this image's error, not the batch's
  GrabCutOptions options;
  options.num_threads = 2;
  const BatchOutcome out = grabcut_cpu_batch(items_of(scenes), options);
  for (Scene& s : alone) grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), s.model.data(), GrabCutOptions{});
  for (size_t b = 0; b < alone.size(); ++b) {
    EXPECT_EQ(scenes[b].mask, alone[b].mask) << b;
    EXPECT_EQ(scenes[b].model, alone[b].model) << b;
    EXPECT_TRUE(out.errors[b].empty()) << out.errors[b];
  }
  EXPECT_NE(out.errors[3].find("mask: expected labels 0..3"), std::string::npos) << out.errors[3];
  options.num_threads = -1;
  EXPECT_THROW(grabcut_cpu_batch(items_of(scenes), options), std::invalid_argument);
}

#ifdef GRABCUT_COUNT_STAGE_THREADS
// The largest OpenMP team the CPU stages ran with during one batch.
int stage_threads_of(std::vector<Scene> scenes, int threads) {
  GrabCutOptions options;
  options.num_threads = threads;
  take_max_stage_threads();
  grabcut_cpu_batch(items_of(scenes), options);
  return take_max_stage_threads();
}

TEST(GrabCutCpuBatch, OneImageRunsOnEveryThreadABatchOnOneThreadEach) {
  for (int threads : {1, 2, 3}) EXPECT_EQ(stage_threads_of({make_scene(40, 60, 1)}, threads), threads);
  const Scene small = make_scene(30, 40, 1);
  EXPECT_EQ(stage_threads_of({small, small, small}, 2), 1);
  // An image with more than a thread's share of the work runs first, alone, on every thread.
  for (int threads : {2, 3}) EXPECT_EQ(stage_threads_of({small, make_scene(150, 200, 2), small}, threads), threads);
  // Probable pixels weigh, not the size: a large image with a small box is not wide.
  Scene big_small_box = make_scene(150, 200, 2);
  std::fill(big_small_box.mask.begin(), big_small_box.mask.end(), kBackground);
  for (int y = 70; y < 80; ++y) std::fill_n(big_small_box.mask.begin() + y * 200 + 90, 10, kProbForeground);
  EXPECT_EQ(stage_threads_of({big_small_box, small, small, small, small}, 2), 1);
}

TEST(GrabCutCpuBatch, OneLevelOfParallelismEvenWhereOpenMPNests) {
  // With nesting allowed, the batch's images, already run in parallel, must not each
  // start a team of their own (2 x 2 threads here).
  const int levels = omp_get_max_active_levels();
  omp_set_max_active_levels(4);
  const Scene small = make_scene(30, 40, 1);
  const int batch = stage_threads_of({small, small, small}, 2);
  const int one = stage_threads_of({small}, 2);
  omp_set_max_active_levels(levels);
  EXPECT_EQ(batch, 1);
  EXPECT_EQ(one, 2);
}
#endif

}  // namespace
}  // namespace grabcut
