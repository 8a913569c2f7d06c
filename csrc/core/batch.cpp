#include "core/batch.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <new>
#include <numeric>

namespace grabcut {
namespace {

// Runs one image, recording what it throws: nothing may leave an OpenMP region.
void run_recorded(int b, int threads, const std::function<void(int, int)>& run_image, BatchOutcome& outcome) {
  const auto at = static_cast<std::size_t>(b);
  try {
    run_image(b, threads);
  } catch (const std::bad_alloc&) {
    outcome.out_of_memory[at] = 1;
  } catch (const std::exception& e) {
    outcome.errors[at] = e.what();
  } catch (...) {
    outcome.errors[at] = "unknown error";
  }
}

}  // namespace

std::int64_t image_work(const std::uint8_t* mask, int height, int width) {
  const std::int64_t n = static_cast<std::int64_t>(height) * width;
  std::int64_t probable = 0;
  for (std::int64_t p = 0; p < n; ++p) probable += is_probable_label(mask[p]) ? 1 : 0;
  return probable + n / 16;
}

BatchSchedule schedule_batch(const std::vector<std::int64_t>& work, int threads) {
  BatchSchedule schedule;
  schedule.order.resize(work.size());
  std::iota(schedule.order.begin(), schedule.order.end(), 0);
  std::stable_sort(schedule.order.begin(), schedule.order.end(),
                   [&](int a, int b) { return work[static_cast<std::size_t>(a)] > work[static_cast<std::size_t>(b)]; });
  const std::int64_t total = std::accumulate(work.begin(), work.end(), std::int64_t{0});
  while (schedule.wide < schedule.order.size() && threads > 1 &&
         work[static_cast<std::size_t>(schedule.order[schedule.wide])] * threads > total) {
    ++schedule.wide;
  }
  return schedule;
}

BatchOutcome run_batch(const BatchSchedule& schedule, int threads, const std::function<void(int, int)>& run_image,
                       const StopRequested& stop_requested) {
  const std::size_t count = schedule.order.size();
  BatchOutcome outcome;
  outcome.errors.resize(count);
  outcome.out_of_memory.assign(count, 0);
  // Thread-safe by contract; once true, true for the rest of the batch here.
  std::atomic<bool> stopped{false};
  const auto stop = [&] {
    if (!stopped.load(std::memory_order_relaxed) && stop_requested && stop_requested()) {
      stopped.store(true, std::memory_order_relaxed);
    }
    return stopped.load(std::memory_order_relaxed);
  };
  for (std::size_t i = 0; i < schedule.wide; ++i) {
    if (i > 0 && stop()) break;
    run_recorded(schedule.order[i], std::max(threads, 1), run_image, outcome);
  }
  std::atomic<std::size_t> next{schedule.wide};
  const std::size_t workers =
      std::min<std::size_t>(count - schedule.wide, static_cast<std::size_t>(std::max(threads, 1)));
  const auto work = [&](int image_threads) {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= count || (i > 0 && stop())) return;
      run_recorded(schedule.order[i], image_threads, run_image, outcome);
    }
  };
  const bool go_on = schedule.wide == 0 || !stop();
  if (go_on && workers == 1) {
    work(std::max(threads, 1));  // one image left (or one thread): it gets every thread
  } else if (go_on && workers > 1) {
    const int team = static_cast<int>(workers);
#pragma omp parallel num_threads(team)
    work(1);
  }
  outcome.stopped = stopped.load();
  return outcome;
}

BatchOutcome grabcut_cpu_batch(const std::vector<CpuImage>& images, const GrabCutOptions& options,
                               const StopRequested& stop_requested) {
  validate_options(options);
  const int threads = options.num_threads > 0 ? options.num_threads : omp_get_max_threads();
  std::vector<std::int64_t> work(images.size(), 0);
  if (images.size() > 1 && threads > 1) {
    for (std::size_t b = 0; b < images.size(); ++b)
      work[b] = image_work(images[b].mask, images[b].height, images[b].width);
  }
  const auto run_image = [&](int b, int image_threads) {
    const CpuImage& im = images[static_cast<std::size_t>(b)];
    GrabCutOptions one = options;
    one.num_threads = image_threads;
    grabcut_cpu(im.image, im.height, im.width, im.mask, im.model, one);
  };
  return run_batch(schedule_batch(work, threads), threads, run_image, stop_requested);
}

}  // namespace grabcut
