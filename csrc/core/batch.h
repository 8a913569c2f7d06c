// A batch of images on the CPU: which image runs when, on how many threads, and
// the run itself (grabcut_cpu on each image), collecting what each image threw.
// The CUDA twin is grabcut::cuda::grabcut (cuda/driver.h), which runs a whole batch at once.
//
// Images run in parallel, each on one thread (grabcut_cpu runs single-threaded
// inside a parallel region), the most work first, except those with more than one
// thread's share of the batch's work: given one thread, such an image would finish
// long after the others while the other threads idle, so these run first, one after
// another, each on every thread. The threads take the next image from one shared
// counter rather than a fixed share each: images of different sizes balance, and
// once a stop is requested every thread stops after its current image, not after
// the rest of its share. The results do not depend on the order (each image is
// solved alone, deterministically).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/driver.h"

namespace grabcut {

// One image of a batch, as grabcut_cpu takes it: planar uint8 3 x height x width,
// its mask (labels, updated in place) and its model (2 * components rows of
// kParamsPerComponent doubles, read unless init_model, always written).
struct CpuImage {
  const std::uint8_t* image = nullptr;
  int height = 0;
  int width = 0;
  std::uint8_t* mask = nullptr;
  double* model = nullptr;
};

// The measure of an image's work that the schedule sorts by: its probable pixels
// (labels 2 and 3, which the max-flow solves: most of a call, and on GrabCut-50 a
// better predictor of an image's time than its size, correlation 0.77 against 0.39)
// plus a sixteenth of its pixels (the per-pixel stages).
std::int64_t image_work(const std::uint8_t* mask, int height, int width);

// The order of a batch's images on `threads` threads: order[0, wide) run one after
// another on every thread, order[wide, end) then in parallel, one thread each.
struct BatchSchedule {
  std::vector<int> order;  // most work first; equal work in batch order
  std::size_t wide = 0;    // images with more than 1 / threads of the total work
};

// The schedule of images with this work (image_work of each) on `threads` threads.
BatchSchedule schedule_batch(const std::vector<std::int64_t>& work, int threads);

// What became of each image of a batch.
struct BatchOutcome {
  std::vector<std::string> errors;  // what running it threw (empty: none)
  std::vector<char> out_of_memory;  // 1 where it threw std::bad_alloc
  bool stopped = false;             // a stop was requested: images after it may not have run
};

// Asked between images, on the thread that called run_batch and on the workers;
// true stops the batch once the images in progress are done. May be empty (never).
using StopRequested = std::function<bool()>;

// Runs run_image(b, threads) for every image b in the schedule's order: the wide
// ones one after another with threads = `threads`, the others in an OpenMP team of
// up to `threads` threads with threads = 1 each. An exception from run_image is
// recorded against its image (the others still run); the first image always runs,
// later ones only while stop_requested says false.
BatchOutcome run_batch(const BatchSchedule& schedule, int threads, const std::function<void(int, int)>& run_image,
                       const StopRequested& stop_requested = {});

// grabcut_cpu on every image, scheduled as above on options.num_threads threads (0:
// the calling thread's OpenMP limit). options are validated first (throws
// std::invalid_argument naming the option); an image's own error (bad labels, a
// class without pixels) is recorded in the outcome, not thrown.
BatchOutcome grabcut_cpu_batch(const std::vector<CpuImage>& images, const GrabCutOptions& options,
                               const StopRequested& stop_requested = {});

}  // namespace grabcut
