// Times grabcut::cuda::grabcut (5 iterations, box masks) with CUDA events: one 1024x1024
// image, a batch of 50 images of about 500x400, one 4096x4096 image; median of
// repeated runs after a warm-up, and the time of each stage for 1024x1024. The
// synthetic images are smooth colour blobs plus noise. The 1024x1024 result is
// also checked against grabcut_cpu (masks and models identical).
//
// Usage: bench_grabcut_cuda [repeats (default 10)]
//        bench_grabcut_cuda list FILE [repeats (default 5)] [batch]
// The second form times real images, a list written by bench/grabcut50_ppm.py, under
// max-flow schedules side by side (v0.7's and today's default, relabels capped at 12
// sweeps; GRABCUT_BENCH_SCHEDULES picks others, see bench_schedules.h): every image
// alone, 5 iterations from its box, schedules alternated image by image; then the median,
// 90th percentile and slowest image per schedule. Every schedule's masks are
// checked against grabcut_cpu. With `batch`, also all images as one batch per
// schedule (the GPU benchmark's GrabCut-50 list call at native sizes);
// GRABCUT_BENCH_ITERATIONS=1 then also times the batch iteration by iteration and
// stage by stage (time_iterations); GRABCUT_BENCH_BATCH_ONLY=1 leaves out the images
// one at a time.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench_schedules.h"
#include "common/grabcut_iterations.h"
#include "common/percentile.h"
#include "common/ppm_image.h"
#include "core/driver.h"
#include "core/energy.h"
#include "cuda/check.h"
#include "cuda/driver.h"
#include "cuda/maxflow.h"
#include "cuda/stages.h"

namespace {

using grabcut::GrabCutOptions;
using grabcut::kParamsPerComponent;
using grabcut::testing::percentile;
using grabcut::cuda::BatchLayout;

struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DevicePtr = std::unique_ptr<void, CudaFree>;

DevicePtr device_alloc(std::size_t bytes) {
  void* p = nullptr;
  GRABCUT_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)));
  return DevicePtr(p);
}

struct StreamDestroy {
  void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
using Stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDestroy>;

struct EventDeleter {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
using Event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDeleter>;
Event make_event() {
  cudaEvent_t e = nullptr;
  GRABCUT_CUDA_CHECK(cudaEventCreate(&e));
  return Event(e);
}

// Planar 3 x h x w: a gradient, 8 coloured discs (one centred object), noise.
std::vector<std::uint8_t> synthetic_image(int h, int w, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  struct Disc {
    double cy, cx, r;
    int c[3];
  };
  std::vector<Disc> discs;
  for (int i = 0; i < 7; ++i)
    discs.push_back({unit(rng) * h, unit(rng) * w, (0.05 + 0.2 * unit(rng)) * std::max(h, w), {byte(rng), byte(rng), byte(rng)}});
  discs.push_back({h / 2.0, w / 2.0, 0.3 * std::min(h, w), {byte(rng), byte(rng), byte(rng)}});
  const int base[3] = {byte(rng), byte(rng), byte(rng)};
  std::normal_distribution<double> noise(0.0, 8.0);
  const std::size_t n = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  std::vector<std::uint8_t> img(3 * n);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      int c[3] = {base[0] + 60 * y / h, base[1] + 60 * x / w, base[2] + 30 * (x + y) / (h + w)};
      for (const Disc& d : discs) {
        const double dy = y - d.cy;
        const double dx = x - d.cx;
        if (dy * dy + dx * dx < d.r * d.r)
          for (int k = 0; k < 3; ++k) c[k] = (c[k] + 3 * d.c[k]) / 4;
      }
      const std::size_t p = static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x);
      for (int k = 0; k < 3; ++k)
        img[k * n + p] = static_cast<std::uint8_t>(std::min(255, std::max(0, c[k] + static_cast<int>(noise(rng)))));
    }
  }
  return img;
}

// PR_FGD inside a box of 1/8 margins, BGD outside.
std::vector<std::uint8_t> box_mask(int h, int w) {
  return grabcut::testing::box_labels(h, w, w / 8, h / 8, w - w / 8, h - h / 8);
}

struct Problem {
  BatchLayout layout;
  std::vector<std::vector<std::uint8_t>> host_images;  // compact planar
  std::vector<std::vector<std::uint8_t>> host_masks;   // compact
  DevicePtr images, masks, pristine_masks, models, workspace;
  std::size_t mask_bytes = 0;
  std::size_t workspace_bytes = 0;
  std::int64_t pixels = 0;
};

struct Size {
  int height;
  int width;
};

// An image (planar) and its starting mask.
struct HostImage {
  int height = 0;
  int width = 0;
  std::vector<std::uint8_t> pixels;
  std::vector<std::uint8_t> mask;
};

// Synthetic images of these sizes, each with a box of 1/8 margins.
std::vector<HostImage> synthetic_images(const std::vector<Size>& sizes) {
  std::vector<HostImage> out;
  for (std::size_t b = 0; b < sizes.size(); ++b) {
    const int h = sizes[b].height;
    const int w = sizes[b].width;
    out.push_back({h, w, synthetic_image(h, w, static_cast<std::uint32_t>(1234 + b)), box_mask(h, w)});
  }
  return out;
}

// A listed image (bench/grabcut50_ppm.py) with PR_FGD in its box, BGD outside.
HostImage listed_image(const grabcut::testing::ListedImage& item) {
  return {item.image.height, item.image.width, item.image.planar(),
          grabcut::testing::box_labels(item.image.height, item.image.width, item.x0, item.y0, item.x1, item.y1)};
}

std::unique_ptr<Problem> make_image_problem(const std::vector<HostImage>& host, const GrabCutOptions& options) {
  auto pr = std::make_unique<Problem>();
  for (const HostImage& e : host) {
    pr->layout.pitch_height = std::max(pr->layout.pitch_height, e.height);
    pr->layout.pitch_width = std::max(pr->layout.pitch_width, e.width);
    pr->layout.add(e.height, e.width);
  }
  const auto ph = static_cast<std::size_t>(pr->layout.pitch_height);
  const auto pw = static_cast<std::size_t>(pr->layout.pitch_width);
  const std::size_t nb = host.size();
  std::vector<std::uint8_t> images(nb * 3 * ph * pw, 0);
  std::vector<std::uint8_t> masks(nb * ph * pw, 0);
  for (std::size_t b = 0; b < nb; ++b) {
    const int h = host[b].height;
    const int w = host[b].width;
    const std::size_t n = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
    pr->pixels += static_cast<std::int64_t>(n);
    pr->host_images.push_back(host[b].pixels);
    pr->host_masks.push_back(host[b].mask);
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w; ++x) {
        const std::size_t p = static_cast<std::size_t>(y) * w + x;
        for (std::size_t c = 0; c < 3; ++c) images[((b * 3 + c) * ph + y) * pw + x] = pr->host_images[b][c * n + p];
        masks[(b * ph + y) * pw + x] = pr->host_masks[b][p];
      }
    }
  }
  pr->mask_bytes = masks.size();
  pr->images = device_alloc(images.size());
  pr->masks = device_alloc(masks.size());
  pr->pristine_masks = device_alloc(masks.size());
  pr->models = device_alloc(nb * 2 * options.components * kParamsPerComponent * sizeof(double));
  GRABCUT_CUDA_CHECK(cudaMemcpy(pr->images.get(), images.data(), images.size(), cudaMemcpyHostToDevice));
  GRABCUT_CUDA_CHECK(cudaMemcpy(pr->pristine_masks.get(), masks.data(), masks.size(), cudaMemcpyHostToDevice));
  // The benchmark's stream is non-blocking: it does not wait for these copies (legacy
  // default stream, pageable memory: they may return before they land).
  GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());
  pr->workspace_bytes = grabcut::cuda::grabcut_workspace_bytes(pr->layout, options);
  pr->workspace = device_alloc(pr->workspace_bytes);
  return pr;
}

std::unique_ptr<Problem> make_problem(const std::vector<Size>& sizes, const GrabCutOptions& options) {
  return make_image_problem(synthetic_images(sizes), options);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Median ms of `body` over `repeats` timed runs after one warm-up; `reset` runs
// before each, outside the timed region.
double time_median(cudaStream_t stream, int repeats, const std::function<void()>& reset,
                   const std::function<void()>& body) {
  Event start = make_event();
  Event stop = make_event();
  reset();
  body();  // warm-up
  GRABCUT_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    reset();
    GRABCUT_CUDA_CHECK(cudaEventRecord(start.get(), stream));
    body();
    GRABCUT_CUDA_CHECK(cudaEventRecord(stop.get(), stream));
    GRABCUT_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float t = 0.0F;
    GRABCUT_CUDA_CHECK(cudaEventElapsedTime(&t, start.get(), stop.get()));
    ms.push_back(t);
  }
  return median(ms);
}

double time_grabcut(Problem& pr, const GrabCutOptions& options, cudaStream_t stream, int repeats,
                    const grabcut::cuda::MaxflowSchedule& schedule = {}) {
  return time_median(
      stream, repeats,
      [&] {
        GRABCUT_CUDA_CHECK(cudaMemcpyAsync(pr.masks.get(), pr.pristine_masks.get(), pr.mask_bytes,
                                           cudaMemcpyDeviceToDevice, stream));
      },
      [&] {
        grabcut::cuda::grabcut(pr.layout, static_cast<const std::uint8_t*>(pr.images.get()),
                                    static_cast<std::uint8_t*>(pr.masks.get()), static_cast<double*>(pr.models.get()),
                                    pr.workspace.get(), pr.workspace_bytes, options, stream, schedule);
      });
}

// The same, captured once into a CUDA graph and replayed (fewer launch gaps).
double time_grabcut_graph(Problem& pr, const GrabCutOptions& options, cudaStream_t stream, int repeats) {
  GRABCUT_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  cudaGraph_t graph = nullptr;
  try {
    grabcut::cuda::grabcut(pr.layout, static_cast<const std::uint8_t*>(pr.images.get()),
                                static_cast<std::uint8_t*>(pr.masks.get()), static_cast<double*>(pr.models.get()),
                                pr.workspace.get(), pr.workspace_bytes, options, stream);
  } catch (...) {
    cudaStreamEndCapture(stream, &graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
    throw;
  }
  GRABCUT_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  GRABCUT_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  const double ms = time_median(
      stream, repeats,
      [&] {
        GRABCUT_CUDA_CHECK(cudaMemcpyAsync(pr.masks.get(), pr.pristine_masks.get(), pr.mask_bytes,
                                           cudaMemcpyDeviceToDevice, stream));
      },
      [&] { GRABCUT_CUDA_CHECK(cudaGraphLaunch(exec, stream)); });
  GRABCUT_CUDA_CHECK(cudaGraphExecDestroy(exec));
  GRABCUT_CUDA_CHECK(cudaGraphDestroy(graph));
  return ms;
}

// The stages one by one on a problem's whole batch (after a full run, so the masks
// are the converged ones; the stage inputs are valid). `what` names the problem.
void time_stages(Problem& pr, const GrabCutOptions& options, cudaStream_t stream, int repeats, const char* what) {
  namespace gc = grabcut::cuda;
  const int k = options.components;
  gc::WorkspaceCarver counter(nullptr, 0);
  gc::carve_stage_scratch(pr.layout, k, true, counter);
  const auto total = static_cast<std::size_t>(pr.layout.total_pixels());
  std::vector<gc::GridDesc> desc;
  for (const gc::BatchImage& im : pr.layout.images) {
    if (im.pixels() > 0) desc.push_back(im);
  }
  const std::size_t mf_bytes = gc::maxflow_workspace_bytes(desc);
  DevicePtr scratch_mem = device_alloc(counter.used());
  DevicePtr component = device_alloc(total);
  DevicePtr side = device_alloc(total);
  DevicePtr terminal = device_alloc(total * 4);
  DevicePtr nlinks = device_alloc(4 * total * 4);
  DevicePtr flows = device_alloc(8 * desc.size());
  DevicePtr mf = device_alloc(mf_bytes);
  gc::WorkspaceCarver carver(scratch_mem.get(), counter.used());
  const gc::StageScratch s = gc::carve_stage_scratch(pr.layout, k, true, carver);
  GRABCUT_CUDA_CHECK(cudaMemsetAsync(s.sums, 0, sizeof(std::int64_t) * 2 * k * 10, stream));
  const gc::StageBatch batch = gc::upload_batch(pr.layout, s.images, stream);
  const auto* images = static_cast<const std::uint8_t*>(pr.images.get());
  auto* masks = static_cast<std::uint8_t*>(pr.masks.get());
  auto* models = static_cast<double*>(pr.models.get());
  auto* comp = static_cast<std::uint8_t*>(component.get());
  auto* term = static_cast<std::int32_t*>(terminal.get());
  std::int32_t* nl[4];
  for (int d = 0; d < 4; ++d) nl[d] = static_cast<std::int32_t*>(nlinks.get()) + d * total;
  gc::BatchedGridGraph graph;
  graph.desc = desc;
  graph.total_pixels = pr.pixels;
  graph.terminal = term;
  for (int d = 0; d < 4; ++d) graph.nlink[d] = nl[d];
  auto* src = static_cast<std::uint8_t*>(side.get());
  const gc::MaxflowSchedule schedule = gc::grabcut_schedule(pr.layout);
  const auto nothing = [] {};
  struct Row {
    const char* name;
    double ms;
  };
  std::vector<Row> rows;
  rows.push_back({"kmeans_init", time_median(stream, repeats, nothing, [&] {
                    gc::kmeans_init_cuda(batch, images, masks, k, options.seed, comp, s, stream);
                  })});
  rows.push_back({"learn_gmms", time_median(stream, repeats, nothing, [&] {
                    gc::learn_gmms_cuda(batch, images, masks, k, comp, models, s.sums, stream);
                  })});
  rows.push_back({"ssd + nlinks (once)", time_median(stream, repeats, nothing, [&] {
                    gc::sum_squared_differences_cuda(batch, images, s.ssd, stream);
                    gc::nlinks_cuda(batch, images, options.gamma, s.ssd, nl, stream);
                  })});
  rows.push_back({"assign_components", time_median(stream, repeats, nothing, [&] {
                    gc::assign_components_cuda(batch, images, masks, k, models, comp, s.evals, nullptr, stream);
                  })});
  rows.push_back({"tlinks", time_median(stream, repeats, nothing, [&] {
                    gc::tlinks_cuda(batch, images, masks, k, models, options.gamma, s.evals, term, stream);
                  })});
  rows.push_back({"maxflow (cold)", time_median(stream, repeats, nothing, [&] {
                    gc::maxflow_cuda(graph, src, static_cast<std::int64_t*>(flows.get()), mf.get(), mf_bytes, false,
                                     stream, schedule);
                  })});
  rows.push_back({"maxflow (warm, same graph)", time_median(stream, repeats, nothing, [&] {
                    gc::maxflow_cuda(graph, src, static_cast<std::int64_t*>(flows.get()), mf.get(), mf_bytes, true,
                                     stream, schedule);
                  })});
  rows.push_back({"update_masks", time_median(stream, repeats, nothing, [&] {
                    gc::update_masks_cuda(batch, masks, src, nullptr, stream);
                  })});
  std::printf("  stages of %s (median ms):\n", what);
  for (const Row& r : rows) std::printf("    %-28s %9.3f\n", r.name, r.ms);
}

// The problem's masks (pitched, as on the device) and models, after its last run.
struct DeviceResults {
  std::vector<std::uint8_t> masks;
  std::vector<double> models;  // `row` doubles per image
  std::size_t row = 0;
};

DeviceResults download_results(Problem& pr, std::size_t row) {
  DeviceResults r{std::vector<std::uint8_t>(pr.mask_bytes), std::vector<double>(pr.layout.images.size() * row), row};
  GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());
  GRABCUT_CUDA_CHECK(cudaMemcpy(r.masks.data(), pr.masks.get(), r.masks.size(), cudaMemcpyDeviceToHost));
  GRABCUT_CUDA_CHECK(cudaMemcpy(r.models.data(), pr.models.get(), r.models.size() * 8, cudaMemcpyDeviceToHost));
  return r;
}

struct ImageComparison {
  std::int64_t differing = 0;  // mask pixels that differ from the reference
  std::int64_t foreground = 0;  // of the device's mask
  bool model_same = false;
};

// Image b of the device results against a CPU mask (compact) and model.
ImageComparison compare_image(const Problem& pr, const DeviceResults& got, std::size_t b,
                              const std::vector<std::uint8_t>& mask, const std::vector<double>& model) {
  const auto ph = static_cast<std::size_t>(pr.layout.pitch_height);
  const auto pw = static_cast<std::size_t>(pr.layout.pitch_width);
  const int h = pr.layout.images[b].height;
  const int w = pr.layout.images[b].width;
  ImageComparison c;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const std::uint8_t g = got.masks[(b * ph + y) * pw + x];
      c.differing += g != mask[static_cast<std::size_t>(y) * w + x];
      c.foreground += g & 1;
    }
  c.model_same = std::memcmp(model.data(), got.models.data() + b * got.row, got.row * 8) == 0;
  return c;
}

bool check_against_cpu(Problem& pr, const GrabCutOptions& options) {
  const std::size_t row = 2 * static_cast<std::size_t>(options.components) * kParamsPerComponent;
  const DeviceResults got = download_results(pr, row);
  bool ok = true;
  for (std::size_t b = 0; b < pr.layout.images.size(); ++b) {
    const int h = pr.layout.images[b].height;
    const int w = pr.layout.images[b].width;
    std::vector<std::uint8_t> mask = pr.host_masks[b];
    std::vector<double> model(row);
    const auto t0 = std::chrono::steady_clock::now();
    const grabcut::GrabCutStats st = grabcut::grabcut_cpu(pr.host_images[b].data(), h, w, mask.data(), model.data(), options);
    const double cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const ImageComparison c = compare_image(pr, got, b, mask, model);
    std::printf("  check vs grabcut_cpu, image %zu: %lld differing mask pixels, models %s, fg %lld of %lld, "
                "CPU %.1f ms (%d iterations)\n",
                b, static_cast<long long>(c.differing), c.model_same ? "identical" : "DIFFER",
                static_cast<long long>(c.foreground), static_cast<long long>(static_cast<std::int64_t>(h) * w), cpu_ms,
                st.iterations);
    ok = ok && c.differing == 0 && c.model_same;
  }
  return ok;
}

// Whether the problem's masks and models on the device are `masks` and `models`
// (one per image, grabcut_cpu's results); prints the images that differ.
bool equals_reference(Problem& pr, const std::vector<std::vector<std::uint8_t>>& masks,
                      const std::vector<std::vector<double>>& models, const char* what) {
  const DeviceResults got = download_results(pr, models.at(0).size());
  bool ok = true;
  for (std::size_t b = 0; b < pr.layout.images.size(); ++b) {
    const ImageComparison c = compare_image(pr, got, b, masks[b], models[b]);
    if (c.differing != 0 || !c.model_same) {
      std::printf("  %s, image %zu: %lld mask pixels differ from grabcut_cpu's, models %s\n", what, b,
                  static_cast<long long>(c.differing), c.model_same ? "identical" : "DIFFER");
      ok = false;
    }
  }
  return ok;
}

// Where a batch's time goes, iteration by iteration (GRABCUT_BENCH_ITERATIONS=1): the
// whole call with max_iter = 0..5 per schedule (each iteration's cost is the
// difference of two neighbours; 0 is the model's initialisation alone), then the
// stages one by one on the batch, so the max-flow's share of an iteration is what
// the other stages leave.
void time_iterations(Problem& pr, const GrabCutOptions& options, cudaStream_t stream, int repeats,
                     const std::vector<grabcut::bench::NamedSchedule>& schedules) {
  std::printf("  the batch by iterations (ms, median of %d): max_iter = 0 1 2 3 4 5, then each iteration's cost\n",
              repeats);
  for (const auto& n : schedules) {
    std::vector<double> ms;
    for (int it = 0; it <= options.max_iter; ++it) {
      GrabCutOptions o = options;
      o.max_iter = it;
      ms.push_back(time_grabcut(pr, o, stream, repeats, n.schedule));
    }
    std::printf("    %-24s", n.name);
    for (const double t : ms) std::printf(" %8.3f", t);
    std::printf("   |");
    for (std::size_t it = 1; it < ms.size(); ++it) std::printf(" %8.3f", ms[it] - ms[it - 1]);
    std::printf("\n");
  }
  time_grabcut(pr, options, stream, 3);  // converged masks for the stages
  time_stages(pr, options, stream, repeats, "the batch");
}

// The list form (see the usage at the top).
int run_list(const std::string& list, int repeats, bool batch, cudaStream_t stream) {
  const auto items = grabcut::testing::read_image_list(list);
  GrabCutOptions options;
  options.max_iter = 5;
  using Named = grabcut::bench::NamedSchedule;
  const std::vector<Named> schedules = grabcut::bench::picked_schedules();
  std::vector<std::vector<double>> ms(schedules.size());
  bool ok = true;
  std::vector<HostImage> all;
  std::vector<std::vector<std::uint8_t>> all_masks;
  std::vector<std::vector<double>> all_models;
  // GRABCUT_BENCH_BATCH_ONLY=1 (with `batch`): the images are not timed one at a time.
  const char* only = std::getenv("GRABCUT_BENCH_BATCH_ONLY");
  const bool batch_only = batch && only != nullptr && std::strcmp(only, "1") == 0;
  std::printf("%-16s %11s", "image", "size");
  for (const Named& n : schedules) std::printf(" %24s", n.name);
  std::printf("   (ms, 5 iterations, median of %d)\n", repeats);
  for (const auto& item : items) {
    HostImage img = listed_image(item);
    std::vector<std::uint8_t> mask = img.mask;
    std::vector<double> model(2 * static_cast<std::size_t>(options.components) * kParamsPerComponent);
    try {
      grabcut::grabcut_cpu(img.pixels.data(), img.height, img.width, mask.data(), model.data(), options);
    } catch (const std::invalid_argument& e) {  // a box that leaves a class empty
      std::printf("%-16s skipped: %s\n", item.name.c_str(), e.what());
      continue;
    }
    std::printf("%-16s %5dx%-5d", item.name.c_str(), img.height, img.width);
    if (!batch_only) {
      auto pr = make_image_problem(std::vector<HostImage>{img}, options);
      for (std::size_t i = 0; i < schedules.size(); ++i) {
        const double t = time_grabcut(*pr, options, stream, repeats, schedules[i].schedule);
        ms[i].push_back(t);
        std::printf(" %24.3f", t);
        ok = equals_reference(*pr, {mask}, {model}, schedules[i].name) && ok;
      }
    }
    if (batch) {
      all.push_back(std::move(img));
      all_masks.push_back(std::move(mask));
      all_models.push_back(std::move(model));
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  if (ms[0].empty() && all.empty()) throw std::runtime_error(list + ": no image could be run");
  std::printf("over %zu images:\n", batch_only ? all.size() : ms[0].size());
  for (std::size_t i = 0; i < schedules.size() && !batch_only; ++i) {
    std::printf("  %-24s median %8.3f  p90 %8.3f  slowest %8.3f ms\n", schedules[i].name, percentile(ms[i], 0.5),
                percentile(ms[i], 0.9), percentile(ms[i], 1.0));
  }
  if (batch && !all.empty()) {
    auto whole = make_image_problem(all, options);
    for (const Named& n : schedules) {
      const double t = time_grabcut(*whole, options, stream, repeats, n.schedule);
      ok = equals_reference(*whole, all_masks, all_models, n.name) && ok;
      std::printf("  all %zu images as one batch, %-24s %8.3f ms\n", all.size(), n.name, t);
    }
    const char* iterations = std::getenv("GRABCUT_BENCH_ITERATIONS");
    if (iterations != nullptr && std::strcmp(iterations, "1") == 0) {
      time_iterations(*whole, options, stream, repeats, schedules);
    }
  }
  if (!ok) {
    std::printf("FAILED: GPU and CPU results differ\n");
    return 1;
  }
  std::printf("every schedule's masks and models equal grabcut_cpu's\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 2 && std::strcmp(argv[1], "list") == 0) {
    try {
      cudaStream_t raw_stream = nullptr;
      GRABCUT_CUDA_CHECK(cudaStreamCreateWithFlags(&raw_stream, cudaStreamNonBlocking));
      const Stream owned_stream(raw_stream);
      const int repeats = argc > 3 ? std::max(3, std::atoi(argv[3])) : 5;
      const bool batch = argc > 4 && std::strcmp(argv[4], "batch") == 0;
      return run_list(argv[2], repeats, batch, owned_stream.get());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
  }
  const int repeats = argc > 1 ? std::max(10, std::atoi(argv[1])) : 10;
  try {
    cudaStream_t raw_stream = nullptr;
    GRABCUT_CUDA_CHECK(cudaStreamCreateWithFlags(&raw_stream, cudaStreamNonBlocking));
    const Stream owned_stream(raw_stream);
    cudaStream_t stream = owned_stream.get();
    GrabCutOptions options;
    options.max_iter = 5;
    bool ok = true;

    {
      auto pr = make_problem({{1024, 1024}}, options);
      GrabCutOptions one = options;
      one.max_iter = 1;
      const double ms1 = time_grabcut(*pr, one, stream, repeats);
      const double ms = time_grabcut(*pr, options, stream, repeats);
      std::printf("1024x1024, 5 iterations: %.3f ms (median of %d); 1 iteration: %.3f ms, so %.3f ms per later "
                  "(warm-started) iteration\n",
                  ms, repeats, ms1, (ms - ms1) / 4.0);
      ok = check_against_cpu(*pr, options) && ok;
      try {
        const double graph_ms = time_grabcut_graph(*pr, options, stream, repeats);
        std::printf("1024x1024 as a replayed CUDA graph: %.3f ms (median of %d)\n", graph_ms, repeats);
        ok = check_against_cpu(*pr, options) && ok;
      } catch (const std::exception& e) {
        std::printf("1024x1024 CUDA graph capture FAILED: %s\n", e.what());
        ok = false;
      }
      time_stages(*pr, options, stream, repeats, "1024x1024");
    }
    {
      std::vector<Size> extents;
      std::mt19937 rng(7);
      std::uniform_int_distribution<int> dh(-20, 20);
      for (int i = 0; i < 50; ++i) extents.push_back({500 + dh(rng), 400 + dh(rng)});
      auto pr = make_problem(extents, options);
      GrabCutOptions one = options;
      one.max_iter = 1;
      const double ms1 = time_grabcut(*pr, one, stream, repeats);
      const double ms = time_grabcut(*pr, options, stream, repeats);
      std::printf("batch of 50 (~500x400, %.1f Mpixel), 5 iterations: %.3f ms (median of %d), %.3f ms per image; "
                  "1 iteration: %.3f ms\n",
                  static_cast<double>(pr->pixels) / 1e6, ms, repeats, ms / 50.0, ms1);
    }
    {
      auto pr = make_problem({{4096, 4096}}, options);
      const double ms = time_grabcut(*pr, options, stream, repeats);
      std::printf("4096x4096, 5 iterations: %.3f ms (median of %d)\n", ms, repeats);
    }
    if (!ok) {
      std::printf("FAILED: GPU and CPU results differ\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
