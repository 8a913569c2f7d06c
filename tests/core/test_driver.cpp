// The CPU GrabCut loop: contract properties that any correct implementation keeps.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/driver.h"
#include "core/limits.h"
#include "core/gmm.h"

namespace grabcut {
namespace {

struct Scene {
  int h = 0;
  int w = 0;
  std::vector<std::uint8_t> image;  // planar
  std::vector<std::uint8_t> mask;
};

// A noisy two-colour scene: a disc of one colour on a background of another,
// with the box mask around the disc.
Scene make_scene(int h, int w, unsigned seed) {
  Scene s;
  s.h = h;
  s.w = w;
  const std::int64_t n = static_cast<std::int64_t>(h) * w;
  s.image.resize(static_cast<std::size_t>(3 * n));
  s.mask.assign(static_cast<std::size_t>(n), kBackground);
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 15.0);
  const double cy = h / 2.0;
  const double cx = w / 2.0;
  const double r = 0.3 * std::min(h, w);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const bool in_disc = (y - cy) * (y - cy) + (x - cx) * (x - cx) < r * r;
      const int base[3] = {in_disc ? 200 : 40, in_disc ? 60 : 90, in_disc ? 50 : 160};
      for (int c = 0; c < 3; ++c) {
        const double v = base[c] + noise(rng);
        s.image[c * n + y * w + x] = static_cast<std::uint8_t>(std::clamp(v, 0.0, 255.0));
      }
      if (std::abs(y - cy) < 0.4 * h && std::abs(x - cx) < 0.4 * w) s.mask[y * w + x] = kProbForeground;
    }
  }
  return s;
}

std::vector<double> empty_model(int k) { return std::vector<double>(static_cast<std::size_t>(2 * k * kParamsPerComponent)); }

TEST(Driver, SegmentsADisc) {
  Scene s = make_scene(60, 80, 1);
  auto model = empty_model(5);
  GrabCutOptions opt;
  const GrabCutStats stats = grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), model.data(), opt);
  EXPECT_GE(stats.iterations, 1);
  EXPECT_LE(stats.iterations, 5);
  EXPECT_EQ(s.mask[30 * 80 + 40], kProbForeground);
  EXPECT_EQ(s.mask[10 * 80 + 20], kProbBackground);
  EXPECT_EQ(s.mask[0], kBackground);
}

TEST(Driver, DeterministicAndThreadCountIndependent) {
  const Scene base = make_scene(50, 70, 2);
  std::vector<std::uint8_t> results[2];
  std::vector<double> models[2];
  const int threads[2] = {1, 2};
  for (int i = 0; i < 2; ++i) {
    omp_set_num_threads(threads[i]);
    Scene s = base;
    models[i] = empty_model(5);
    grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), models[i].data(), GrabCutOptions{});
    results[i] = s.mask;
  }
  omp_set_num_threads(2);
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(models[0], models[1]);
}

TEST(Driver, HardLabelsNeverChange) {
  Scene s = make_scene(40, 40, 3);
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> label(0, 3);
  for (auto& m : s.mask) m = static_cast<std::uint8_t>(label(rng));
  const auto before = s.mask;
  auto model = empty_model(5);
  grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), model.data(), GrabCutOptions{});
  for (std::size_t p = 0; p < before.size(); ++p) {
    if (before[p] < 2) {
      EXPECT_EQ(s.mask[p], before[p]);
    } else {
      EXPECT_GE(s.mask[p], 2);
    }
  }
}

TEST(Driver, EarlyStopEqualsRunningEveryIteration) {
  // Init, then one GC_EVAL iteration at a time, equals max_iter at once.
  const Scene base = make_scene(45, 55, 4);
  Scene all = base;
  auto model_all = empty_model(5);
  GrabCutOptions opt;
  opt.max_iter = 6;
  grabcut_cpu(all.image.data(), all.h, all.w, all.mask.data(), model_all.data(), opt);

  Scene step = base;
  auto model = empty_model(5);
  opt.max_iter = 0;
  grabcut_cpu(step.image.data(), step.h, step.w, step.mask.data(), model.data(), opt);
  opt.init_model = false;
  opt.max_iter = 1;
  for (int i = 0; i < 6; ++i) grabcut_cpu(step.image.data(), step.h, step.w, step.mask.data(), model.data(), opt);
  EXPECT_EQ(step.mask, all.mask);
  EXPECT_EQ(model, model_all);
}

TEST(Driver, FrozenModelIsKept) {
  Scene s = make_scene(30, 30, 5);
  auto model = empty_model(5);
  grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), model.data(), GrabCutOptions{});
  const auto kept = model;
  GrabCutOptions opt;
  opt.init_model = false;
  opt.freeze_model = true;
  const GrabCutStats stats = grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), model.data(), opt);
  EXPECT_EQ(model, kept);
  EXPECT_EQ(stats.iterations, 1);
}

TEST(Driver, BadArgumentsThrow) {
  Scene s = make_scene(10, 10, 6);
  auto model = empty_model(5);
  GrabCutOptions opt;
  opt.max_iter = -1;
  EXPECT_THROW(grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), model.data(), opt), std::invalid_argument);
  opt.max_iter = kMaxIterations + 1;  // core/limits.h, the one bound every layer reads
  EXPECT_THROW(grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), model.data(), opt), std::invalid_argument);
  opt = GrabCutOptions{};
  opt.components = kMaxComponents + 1;
  EXPECT_THROW(grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), model.data(), opt), std::invalid_argument);
  opt = GrabCutOptions{};
  opt.gamma = kMaxGamma * (1 + 1e-15);
  EXPECT_THROW(grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), model.data(), opt), std::invalid_argument);
  opt = GrabCutOptions{};
  opt.components = 0;
  EXPECT_THROW(grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), model.data(), opt), std::invalid_argument);
  opt = GrabCutOptions{};
  s.mask[3] = 4;
  EXPECT_THROW(grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), model.data(), opt), std::invalid_argument);
  s.mask.assign(s.mask.size(), kProbBackground);
  EXPECT_THROW(grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), model.data(), opt), std::invalid_argument);
  opt.init_model = false;  // an all-zero model has no usable component: an error once frozen
  opt.freeze_model = true;
  s.mask[0] = kForeground;
  EXPECT_THROW(grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), model.data(), opt), std::invalid_argument);
  opt = GrabCutOptions{};
  opt.num_threads = -1;
  EXPECT_THROW(grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), model.data(), opt), std::invalid_argument);
}

// GC_EVAL from a model without a usable component in a class (what a result without
// foreground leaves) learns the class from the mask, as cv2.grabCut does: every
// pixel takes component 0, then both mixtures are learnt.
TEST(Driver, NotFrozenModelRelearnsAnEmptyClass) {
  Scene s = make_scene(30, 30, 7);
  auto learnt = empty_model(5);
  grabcut_cpu(s.image.data(), s.h, s.w, s.mask.data(), learnt.data(), GrabCutOptions{});
  auto model = learnt;
  for (int j = 5; j < 10; ++j)
    for (int i = 0; i < kParamsPerComponent; ++i) model[j * kParamsPerComponent + i] = 0.0;
  GrabCutOptions opt;
  opt.init_model = false;
  opt.max_iter = 2;
  auto mask = s.mask;
  EXPECT_NO_THROW(grabcut_cpu(s.image.data(), s.h, s.w, mask.data(), model.data(), opt));
  EXPECT_DOUBLE_EQ(model[5 * kParamsPerComponent], 1.0);  // every foreground pixel in component 0 first
}

TEST(Driver, EmptyAndTinyImages) {
  auto model = empty_model(5);
  EXPECT_NO_THROW(grabcut_cpu(nullptr, 0, 0, nullptr, model.data(), GrabCutOptions{}));
  std::vector<std::uint8_t> img = {10, 200, 20, 210, 30, 220};  // 1 x 2, planar
  std::vector<std::uint8_t> mask = {kBackground, kProbForeground};
  grabcut_cpu(img.data(), 1, 2, mask.data(), model.data(), GrabCutOptions{});
  EXPECT_EQ(mask[0], kBackground);
  EXPECT_TRUE(mask[1] == kProbForeground || mask[1] == kProbBackground);
}

}  // namespace
}  // namespace grabcut
