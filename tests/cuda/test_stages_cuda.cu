// The CUDA stages and driver against their CPU twins, bit for bit: every GPU stage
// (sum of squared differences, n-links, k-means, assignment, learning, t-links) on
// random images and masks of awkward sizes and in mixed-size batches, then the whole
// driver (grabcut::cuda::grabcut vs grabcut_cpu per image: masks and models identical) in
// init and eval modes, with a frozen model, several seeds, and twice for determinism.
//
// Built with GRABCUT_TEST_HOST_MAXFLOW, this file also provides maxflow_cuda itself
// as a host round trip through the CPU solver (a synchronising stand-in, tests only),
// so that the stages and the driver can be checked without the GPU max-flow.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "core/driver.h"
#include "core/energy.h"
#include "core/gmm.h"
#include "core/maxflow.h"
#include "cuda/check.h"
#include "cuda/driver.h"
#include "cuda/maxflow.h"
#include "cuda/stages.h"
#include "test_schedule.h"

#if defined(GRABCUT_TEST_HOST_MAXFLOW)
namespace grabcut::cuda {
std::size_t maxflow_workspace_bytes(const std::vector<GridDesc>& /*desc*/) { return 0; }

void maxflow_cuda(const BatchedGridGraph& graph, std::uint8_t* source_side, std::int64_t* flows, void* /*workspace*/,
                  std::size_t /*workspace_bytes*/, bool /*warm_start*/, cudaStream_t stream) {
  GRABCUT_CUDA_CHECK(cudaStreamSynchronize(stream));
  GridMaxflowSolver solver;
  for (std::size_t g = 0; g < graph.desc.size(); ++g) {
    const GridDesc& d = graph.desc[g];
    const auto n = static_cast<std::size_t>(d.height) * static_cast<std::size_t>(d.width);
    std::vector<std::int32_t> terminal(n);
    std::vector<std::int32_t> nlink[kNumForwardDirections];
    GRABCUT_CUDA_CHECK(cudaMemcpy(terminal.data(), graph.terminal + d.offset, n * 4, cudaMemcpyDeviceToHost));
    GridGraphView view;
    view.height = d.height;
    view.width = d.width;
    view.terminal = terminal.data();
    for (int k = 0; k < kNumForwardDirections; ++k) {
      nlink[k].resize(n);
      GRABCUT_CUDA_CHECK(cudaMemcpy(nlink[k].data(), graph.nlink[k] + d.offset, n * 4, cudaMemcpyDeviceToHost));
      view.nlink[k] = nlink[k].data();
    }
    std::vector<std::uint8_t> side(n);
    std::int64_t flow = solver.solve(view, side.data());
    GRABCUT_CUDA_CHECK(cudaMemcpy(source_side + d.offset, side.data(), n, cudaMemcpyHostToDevice));
    if (flows != nullptr) GRABCUT_CUDA_CHECK(cudaMemcpy(flows + g, &flow, 8, cudaMemcpyHostToDevice));
  }
  GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());  // the copies land before `stream` goes on
}
}  // namespace grabcut::cuda
#endif

namespace {

using grabcut::ComponentEval;
using grabcut::GrabCutOptions;
using grabcut::kNumForwardDirections;
using grabcut::kParamsPerComponent;
using grabcut::cuda::BatchLayout;
using grabcut::cuda::BatchImage;
using grabcut::cuda::StageBatch;
using grabcut::cuda::StageScratch;
using grabcut::cuda::WorkspaceCarver;

// ---- device memory without raw owning pointers ----

struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};

struct StreamDestroy {
  void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
using Stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDestroy>;
Stream make_stream() {
  cudaStream_t s = nullptr;
  GRABCUT_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return Stream(s);
}

// Device memory for the tests. Its copies and fills run on the legacy default stream,
// which the tests' non-blocking streams do not wait for (and a copy from pageable
// memory may return before it lands, a fill at once), so each waits for the device:
// the work that follows on any stream sees their bytes.
template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t count) : count_(count) {
    void* p = nullptr;
    GRABCUT_CUDA_CHECK(cudaMalloc(&p, std::max<std::size_t>(count, 1) * sizeof(T)));
    ptr_.reset(p);
  }
  T* get() const { return static_cast<T*>(ptr_.get()); }
  std::size_t size() const { return count_; }
  void upload(const std::vector<T>& v) {
    if (v.size() != count_) throw std::invalid_argument("upload: size mismatch");
    GRABCUT_CUDA_CHECK(cudaMemcpy(get(), v.data(), count_ * sizeof(T), cudaMemcpyHostToDevice));
    GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());
  }
  std::vector<T> download() const {
    std::vector<T> v(count_);
    GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());
    GRABCUT_CUDA_CHECK(cudaMemcpy(v.data(), get(), count_ * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
  }
  void fill_bytes(int value) {
    GRABCUT_CUDA_CHECK(cudaMemset(get(), value, std::max<std::size_t>(count_, 1) * sizeof(T)));
    GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());
  }

 private:
  std::unique_ptr<void, CudaFree> ptr_;
  std::size_t count_ = 0;
};

// ---- host test data ----

struct HostImage {
  int h = 0;
  int w = 0;
  std::vector<std::uint8_t> image;  // planar 3 x h x w
  std::vector<std::uint8_t> mask;   // h x w labels
  std::int64_t n() const { return static_cast<std::int64_t>(h) * w; }
};

std::uint8_t clamp_u8(int v) { return static_cast<std::uint8_t>(std::min(255, std::max(0, v))); }

// Smooth colour blobs on a gradient, plus noise; or (uniform) independent random colours.
std::vector<std::uint8_t> make_image(int h, int w, std::mt19937& rng, bool uniform) {
  const std::size_t n = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  std::vector<std::uint8_t> img(3 * n);
  std::uniform_int_distribution<int> byte(0, 255);
  if (uniform) {
    for (auto& v : img) v = static_cast<std::uint8_t>(byte(rng));
    return img;
  }
  struct Blob {
    double cy, cx, r;
    int color[3];
  };
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<Blob> blobs(6);
  for (auto& b : blobs) {
    b.cy = unit(rng) * h;
    b.cx = unit(rng) * w;
    b.r = (0.1 + 0.3 * unit(rng)) * std::max(h, w);
    for (int& c : b.color) c = byte(rng);
  }
  // One object in the middle, so a centred box has something to find.
  blobs.push_back(Blob{h / 2.0, w / 2.0, 0.25 * std::min(h, w) + 1.0, {byte(rng), byte(rng), byte(rng)}});
  const int base[3] = {byte(rng), byte(rng), byte(rng)};
  std::normal_distribution<double> noise(0.0, 10.0);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      int color[3] = {base[0] + y * 60 / std::max(h, 1), base[1] + x * 60 / std::max(w, 1), base[2]};
      for (const auto& b : blobs) {
        const double dy = y - b.cy;
        const double dx = x - b.cx;
        if (dy * dy + dx * dx < b.r * b.r)
          for (int c = 0; c < 3; ++c) color[c] = b.color[c];
      }
      const std::size_t p = static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x);
      for (int c = 0; c < 3; ++c) img[c * n + p] = clamp_u8(color[c] + static_cast<int>(noise(rng)));
    }
  }
  return img;
}

// Random labels 0..3, with at least one pixel of each class where n >= 2.
std::vector<std::uint8_t> random_labels(std::int64_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> label(0, 3);
  std::vector<std::uint8_t> m(static_cast<std::size_t>(n));
  for (auto& v : m) v = static_cast<std::uint8_t>(label(rng));
  if (n >= 2) {
    m[0] = grabcut::kProbBackground;
    m[static_cast<std::size_t>(n - 1)] = grabcut::kProbForeground;
  }
  return m;
}

// PR_FGD inside a centred box (a fifth of the image on each side), BGD outside.
std::vector<std::uint8_t> box_mask(int h, int w) {
  std::vector<std::uint8_t> m(static_cast<std::size_t>(h) * static_cast<std::size_t>(w), grabcut::kBackground);
  for (int y = h / 5; y < h - h / 5; ++y)
    for (int x = w / 5; x < w - w / 5; ++x) m[static_cast<std::size_t>(y) * w + x] = grabcut::kProbForeground;
  return m;
}

// A box mask with a few hard-foreground and probable-background rectangles.
std::vector<std::uint8_t> random_trimap(int h, int w, std::mt19937& rng) {
  std::vector<std::uint8_t> m = box_mask(h, w);
  std::uniform_int_distribution<int> ry(0, std::max(h - 1, 0));
  std::uniform_int_distribution<int> rx(0, std::max(w - 1, 0));
  std::uniform_int_distribution<int> lab(0, 3);
  for (int r = 0; r < 6; ++r) {
    int y0 = ry(rng), y1 = ry(rng), x0 = rx(rng), x1 = rx(rng);
    if (y0 > y1) std::swap(y0, y1);
    if (x0 > x1) std::swap(x0, x1);
    const auto label = static_cast<std::uint8_t>(lab(rng));
    for (int y = y0; y <= y1 && y < h; ++y)
      for (int x = x0; x <= x1 && x < w; ++x) m[static_cast<std::size_t>(y) * w + x] = label;
  }
  const std::int64_t n = static_cast<std::int64_t>(h) * w;
  if (n >= 2) {  // both classes present
    m[0] = grabcut::kBackground;
    m[static_cast<std::size_t>(n - 1)] = grabcut::kProbForeground;
  }
  return m;
}

struct Size {
  int h, w;
};

std::vector<HostImage> make_batch(const std::vector<Size>& sizes, std::mt19937& rng, bool uniform_colors) {
  std::vector<HostImage> out;
  for (const Size& s : sizes) {
    HostImage im;
    im.h = s.h;
    im.w = s.w;
    im.image = make_image(s.h, s.w, rng, uniform_colors);
    im.mask = random_labels(im.n(), rng);
    out.push_back(std::move(im));
  }
  return out;
}

// ---- the batch on the device ----

struct DeviceBatch {
  BatchLayout layout;
  std::int64_t total = 0;
  DeviceArray<std::uint8_t> images;
  DeviceArray<std::uint8_t> masks;
  std::vector<std::uint8_t> host_masks;  // the pitched masks as uploaded
  // Where image b starts in the packed per-pixel arrays.
  std::int64_t offset(std::size_t b) const { return layout.images[b].offset; }
};

std::unique_ptr<DeviceBatch> upload_batch_data(const std::vector<HostImage>& imgs) {
  auto d = std::make_unique<DeviceBatch>();
  for (const auto& im : imgs) {
    d->layout.pitch_height = std::max(d->layout.pitch_height, im.h);
    d->layout.pitch_width = std::max(d->layout.pitch_width, im.w);
    d->layout.add(im.h, im.w);
  }
  // An extra column and row of pitch, so padding exists for every image.
  d->layout.pitch_height += 1;
  d->layout.pitch_width += 2;
  d->total = d->layout.total_pixels();
  const auto ph = static_cast<std::size_t>(d->layout.pitch_height);
  const auto pw = static_cast<std::size_t>(d->layout.pitch_width);
  // Padding: colours that would change any sum, labels outside 0..3.
  std::vector<std::uint8_t> images(imgs.size() * 3 * ph * pw, 0xA7);
  std::vector<std::uint8_t> masks(imgs.size() * ph * pw, 0x07);
  for (std::size_t b = 0; b < imgs.size(); ++b) {
    const HostImage& im = imgs[b];
    const auto n = static_cast<std::size_t>(im.n());
    for (int y = 0; y < im.h; ++y) {
      for (int x = 0; x < im.w; ++x) {
        const std::size_t p = static_cast<std::size_t>(y) * im.w + x;
        for (std::size_t c = 0; c < 3; ++c) images[((b * 3 + c) * ph + y) * pw + x] = im.image[c * n + p];
        masks[(b * ph + y) * pw + x] = im.mask[p];
      }
    }
  }
  d->images = DeviceArray<std::uint8_t>(images.size());
  d->images.upload(images);
  d->masks = DeviceArray<std::uint8_t>(masks.size());
  d->masks.upload(masks);
  d->host_masks = std::move(masks);
  return d;
}

std::vector<std::uint8_t> mask_of(const DeviceBatch& d, const std::vector<std::uint8_t>& all_masks, std::size_t b) {
  const auto ph = static_cast<std::size_t>(d.layout.pitch_height);
  const auto pw = static_cast<std::size_t>(d.layout.pitch_width);
  const BatchImage& e = d.layout.images[b];
  std::vector<std::uint8_t> m(static_cast<std::size_t>(e.height) * static_cast<std::size_t>(e.width));
  for (int y = 0; y < e.height; ++y)
    for (int x = 0; x < e.width; ++x) m[static_cast<std::size_t>(y) * e.width + x] = all_masks[(b * ph + y) * pw + x];
  return m;
}

// Stage scratch carved from its own buffer.
struct Scratch {
  DeviceArray<unsigned char> memory;
  StageScratch s;
  StageBatch batch;
};

std::unique_ptr<Scratch> make_scratch(const DeviceBatch& d, int k) {
  auto sc = std::make_unique<Scratch>();
  WorkspaceCarver counter(nullptr, 0);
  grabcut::cuda::carve_stage_scratch(d.layout, k, true, counter);
  sc->memory = DeviceArray<unsigned char>(counter.used());
  sc->memory.fill_bytes(0xCD);  // poison
  WorkspaceCarver carver(sc->memory.get(), counter.used());
  sc->s = grabcut::cuda::carve_stage_scratch(d.layout, k, true, carver);
  GRABCUT_CUDA_CHECK(cudaMemset(sc->s.sums, 0,
                                sizeof(std::int64_t) * d.layout.images.size() * 2 * k * grabcut::cuda::detail::kSumFields));
  GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());  // the stages run on a non-blocking stream
  sc->batch = grabcut::cuda::upload_batch(d.layout, sc->s.images, nullptr);
  return sc;
}

template <typename T>
std::vector<T> slice(const std::vector<T>& v, std::int64_t offset, std::int64_t n) {
  return std::vector<T>(v.begin() + offset, v.begin() + offset + n);
}

// Index of the first difference, or -1.
template <typename T>
std::int64_t first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<std::int64_t>(i);
  return -1;
}

std::string describe(const HostImage& im, std::size_t b) {
  return "image " + std::to_string(b) + " (" + std::to_string(im.h) + "x" + std::to_string(im.w) + ")";
}

// ---- stage tests ----

struct StageCase {
  std::string name;
  std::vector<Size> sizes;
};

std::vector<StageCase> stage_cases() {
  return {{"1x1", {{1, 1}}},
          {"1x257", {{1, 257}}},
          {"257x1", {{257, 1}}},
          {"31x33", {{31, 33}}},
          {"200x300", {{200, 300}}},
          {"640x480", {{640, 480}}},
          {"mixed", {{31, 33}, {1, 257}, {200, 300}, {257, 1}, {1, 1}, {64, 64}, {2, 2}}}};
}

void run_stage_checks(const std::vector<HostImage>& imgs, int k, std::uint64_t seed) {
  auto d = upload_batch_data(imgs);
  auto sc = make_scratch(*d, k);
  const StageBatch& batch = sc->batch;
  const std::size_t nb = imgs.size();
  const auto total = static_cast<std::size_t>(d->total);

  // Sum of squared differences and n-links.
  grabcut::cuda::sum_squared_differences_cuda(batch, d->images.get(), sc->s.ssd, nullptr);
  DeviceArray<std::int32_t> nlinks(kNumForwardDirections * total);
  nlinks.fill_bytes(0xCD);
  std::int32_t* nl[kNumForwardDirections];
  for (int i = 0; i < kNumForwardDirections; ++i) nl[i] = nlinks.get() + i * total;
  grabcut::cuda::nlinks_cuda(batch, d->images.get(), grabcut::kDefaultGamma, sc->s.ssd, nl, nullptr);
  std::vector<std::int64_t> ssd(nb);
  GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());
  GRABCUT_CUDA_CHECK(cudaMemcpy(ssd.data(), sc->s.ssd, nb * 8, cudaMemcpyDeviceToHost));
  const std::vector<std::int32_t> gpu_nlinks = nlinks.download();
  for (std::size_t b = 0; b < nb; ++b) {
    const HostImage& im = imgs[b];
    const std::int64_t cpu_ssd = grabcut::sum_squared_differences_cpu(im.image.data(), im.h, im.w);
    EXPECT_EQ(ssd[b], cpu_ssd) << describe(im, b);
    const double beta = grabcut::beta_from_sum(cpu_ssd, im.h, im.w);
    std::vector<std::int32_t> cpu(static_cast<std::size_t>(kNumForwardDirections * im.n()));
    std::int32_t* cnl[kNumForwardDirections];
    for (int i = 0; i < kNumForwardDirections; ++i) cnl[i] = cpu.data() + i * im.n();
    grabcut::nlinks_cpu(im.image.data(), im.h, im.w, grabcut::kDefaultGamma, beta, cnl);
    for (int i = 0; i < kNumForwardDirections; ++i) {
      const auto g = slice(gpu_nlinks, static_cast<std::int64_t>(i * total) + d->offset(b), im.n());
      const auto c = slice(cpu, i * im.n(), im.n());
      EXPECT_EQ(first_difference(g, c), -1) << describe(im, b) << " n-link direction " << i;
    }
  }

  // k-means (images where the CPU accepts the mask: both classes present).
  DeviceArray<std::uint8_t> component(total);
  component.fill_bytes(0xEE);
  grabcut::cuda::kmeans_init_cuda(batch, d->images.get(), d->masks.get(), k, seed, component.get(), sc->s, nullptr);
  const std::vector<std::uint8_t> gpu_kmeans = component.download();
  std::vector<std::uint8_t> cpu_components(total, 0);
  int checked = 0;
  for (std::size_t b = 0; b < nb; ++b) {
    const HostImage& im = imgs[b];
    std::vector<std::uint8_t> cpu(static_cast<std::size_t>(im.n()), 0);
    try {
      grabcut::kmeans_init_cpu(im.image.data(), im.mask.data(), im.n(), k, seed, cpu.data());
    } catch (const std::invalid_argument&) {
      continue;  // a class without pixels: the GPU only has to stay in bounds
    }
    ++checked;
    const auto g = slice(gpu_kmeans, d->offset(b), im.n());
    const std::int64_t diff = first_difference(g, cpu);
    EXPECT_EQ(diff, -1) << describe(im, b) << " k-means component at pixel " << diff;
    for (std::int64_t p = 0; p < im.n(); ++p) {
      EXPECT_LT(g[static_cast<std::size_t>(p)], k);
      if (g[static_cast<std::size_t>(p)] >= k) break;
    }
  }
  (void)checked;

  // Learning from random components (and from the k-means components), then
  // assignment and t-links with the learnt models.
  std::mt19937 rng(static_cast<std::uint32_t>(seed * 7 + 1));
  std::uniform_int_distribution<int> comp(0, k - 1);
  std::vector<std::uint8_t> random_components(total);
  for (auto& c : random_components) c = static_cast<std::uint8_t>(comp(rng));
  for (int round = 0; round < 2; ++round) {
    const std::vector<std::uint8_t>& components = round == 0 ? random_components : gpu_kmeans;
    std::vector<std::uint8_t> safe = components;  // k-means of a rejected image may be anything in range
    for (auto& c : safe) c = static_cast<std::uint8_t>(std::min<int>(c, k - 1));
    component.upload(safe);
    const std::size_t model_doubles = nb * 2 * k * kParamsPerComponent;
    DeviceArray<double> models(model_doubles);
    models.fill_bytes(0xCD);
    grabcut::cuda::learn_gmms_cuda(batch, d->images.get(), d->masks.get(), k, component.get(), models.get(),
                                   sc->s.sums, nullptr);
    const std::vector<double> gpu_models = models.download();
    std::vector<double> cpu_models(model_doubles);
    for (std::size_t b = 0; b < nb; ++b) {
      const HostImage& im = imgs[b];
      const auto c = slice(safe, d->offset(b), im.n());
      double* m = cpu_models.data() + b * 2 * k * kParamsPerComponent;
      grabcut::learn_gmms_cpu(im.image.data(), im.mask.data(), im.n(), k, c.data(), m);
      const auto g = slice(gpu_models, static_cast<std::int64_t>(b * 2 * k * kParamsPerComponent), 2 * k * kParamsPerComponent);
      const auto cm = slice(cpu_models, static_cast<std::int64_t>(b * 2 * k * kParamsPerComponent), 2 * k * kParamsPerComponent);
      EXPECT_EQ(first_difference(g, cm), -1) << describe(im, b) << " learnt model, round " << round;
    }
    // The sums must be zero again.
    std::vector<std::int64_t> sums(nb * 2 * k * grabcut::cuda::detail::kSumFields);
    GRABCUT_CUDA_CHECK(cudaMemcpy(sums.data(), sc->s.sums, sums.size() * 8, cudaMemcpyDeviceToHost));
    for (auto v : sums) ASSERT_EQ(v, 0);

    // Assignment with the CPU's models (identical anyway if the check above passed).
    models.upload(cpu_models);
    component.fill_bytes(0xEE);
    DeviceArray<std::int32_t> changed(nb);
    changed.fill_bytes(0);
    grabcut::cuda::assign_components_cuda(batch, d->images.get(), d->masks.get(), k, models.get(), component.get(),
                                          sc->s.evals, changed.get(), nullptr);
    const std::vector<std::uint8_t> gpu_assign = component.download();
    DeviceArray<std::int32_t> terminal(total);
    terminal.fill_bytes(0xCD);
    grabcut::cuda::tlinks_cuda(batch, d->images.get(), d->masks.get(), k, models.get(), grabcut::kDefaultGamma,
                               sc->s.evals, terminal.get(), nullptr);
    const std::vector<std::int32_t> gpu_terminal = terminal.download();
    for (std::size_t b = 0; b < nb; ++b) {
      const HostImage& im = imgs[b];
      const double* m = cpu_models.data() + b * 2 * k * kParamsPerComponent;
      std::vector<std::uint8_t> cpu_assign(static_cast<std::size_t>(im.n()));
      grabcut::assign_components_cpu(im.image.data(), im.mask.data(), im.n(), k, m, cpu_assign.data());
      const std::int64_t diff = first_difference(slice(gpu_assign, d->offset(b), im.n()), cpu_assign);
      EXPECT_EQ(diff, -1) << describe(im, b) << " assignment at pixel " << diff << ", round " << round;
      std::vector<std::int32_t> cpu_terminal(static_cast<std::size_t>(im.n()));
      grabcut::tlinks_cpu(im.image.data(), im.mask.data(), im.n(), k, m, grabcut::kDefaultGamma, cpu_terminal.data());
      const std::int64_t tdiff = first_difference(slice(gpu_terminal, d->offset(b), im.n()), cpu_terminal);
      EXPECT_EQ(tdiff, -1) << describe(im, b) << " t-link at pixel " << tdiff << ", round " << round;
    }
  }
}

}  // namespace

namespace {

void check_all_stage_cases(int k) {
  std::uint64_t seed = 1;
  for (const StageCase& sc : stage_cases()) {
    for (int uniform = 0; uniform < 2; ++uniform) {
      SCOPED_TRACE(sc.name + (uniform ? " uniform colours" : " blobs") + ", k=" + std::to_string(k));
      std::mt19937 rng(static_cast<std::uint32_t>(1000 * k + 10 * seed + uniform));
      run_stage_checks(make_batch(sc.sizes, rng, uniform != 0), k, seed);
      seed = seed * 31 + 7;
    }
  }
}

}  // namespace

TEST(Stages, MatchCpuK5) { check_all_stage_cases(5); }
TEST(Stages, MatchCpuK1) { check_all_stage_cases(1); }
TEST(Stages, MatchCpuK3) { check_all_stage_cases(3); }
TEST(Stages, MatchCpuK16) { check_all_stage_cases(16); }

// A flat image (every colour equal): beta = 0, and k-means with identical colours
// (the total-distance-zero branch).
TEST(StagesEdge, FlatImage) {
  std::vector<HostImage> imgs(1);
  imgs[0].h = 40;
  imgs[0].w = 50;
  imgs[0].image.assign(3 * 2000, 77);
  std::mt19937 rng(5);
  imgs[0].mask = random_labels(2000, rng);
  run_stage_checks(imgs, 5, 99);
}

// ---- driver tests ----

namespace {

struct DriverResult {
  std::vector<std::vector<std::uint8_t>> masks;
  std::vector<std::vector<double>> models;
};

// How check_driver runs grabcut::cuda::grabcut.
enum class Launch {
  kDirect,  // a plain call on a non-blocking stream
  kGraph,   // captured into a CUDA graph (global capture mode: any host synchronisation
            // inside fails the capture), then the graph replayed twice
};

// The max-flow schedule of every driver test that names none (set before any test runs).
const grabcut::cuda::MaxflowSchedule kSchedule = grabcut::testing::schedule_from_environment();

// Runs grabcut::cuda::grabcut on the batch and grabcut_cpu on each image from the same inputs;
// expects identical masks and models. models_in: per-image initial models (eval mode).
DriverResult check_driver(const std::vector<HostImage>& imgs, const GrabCutOptions& options,
                          const std::vector<std::vector<double>>& models_in, Launch launch = Launch::kDirect,
                          const grabcut::cuda::MaxflowSchedule& schedule = kSchedule) {
  const int k = options.components;
  const std::size_t row = static_cast<std::size_t>(2 * k * kParamsPerComponent);
  const std::size_t nb = imgs.size();
  std::vector<double> initial(nb * row);
  for (std::size_t b = 0; b < nb; ++b) {
    if (!models_in.empty()) {
      std::copy(models_in[b].begin(), models_in[b].end(), initial.begin() + static_cast<std::ptrdiff_t>(b * row));
    } else {
      for (std::size_t i = 0; i < row; ++i) initial[b * row + i] = -1234.5 - static_cast<double>(i);  // sentinel
    }
  }
  auto d = upload_batch_data(imgs);
  DeviceArray<double> models(nb * row);
  models.upload(initial);
  const std::size_t bytes = grabcut::cuda::grabcut_workspace_bytes(d->layout, options);
  DeviceArray<unsigned char> workspace(bytes);
  workspace.fill_bytes(0xCD);
  const Stream owned_stream = make_stream();
  cudaStream_t stream = owned_stream.get();
  const auto run = [&] {
    grabcut::cuda::grabcut(d->layout, d->images.get(), d->masks.get(), models.get(), workspace.get(), bytes,
                                options, stream, schedule);
  };
  if (launch == Launch::kDirect) {
    run();
  } else {
    GRABCUT_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    cudaGraph_t graph = nullptr;
    try {
      run();
    } catch (...) {
      cudaStreamEndCapture(stream, &graph);
      if (graph != nullptr) cudaGraphDestroy(graph);
      throw;
    }
    GRABCUT_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    cudaGraphExec_t exec = nullptr;
    GRABCUT_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int replay = 0; replay < 2; ++replay) {
      d->masks.upload(d->host_masks);
      models.upload(initial);
      GRABCUT_CUDA_CHECK(cudaGraphLaunch(exec, stream));
      GRABCUT_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    GRABCUT_CUDA_CHECK(cudaGraphExecDestroy(exec));
    GRABCUT_CUDA_CHECK(cudaGraphDestroy(graph));
  }
  GRABCUT_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<std::uint8_t> all_masks = d->masks.download();
  const std::vector<double> gpu_models = models.download();

  DriverResult result;
  for (std::size_t b = 0; b < nb; ++b) {
    const HostImage& im = imgs[b];
    std::vector<std::uint8_t> cpu_mask = im.mask;
    std::vector<double> cpu_model(initial.begin() + static_cast<std::ptrdiff_t>(b * row),
                                  initial.begin() + static_cast<std::ptrdiff_t>((b + 1) * row));
    grabcut::GrabCutStats stats = grabcut::grabcut_cpu(im.image.data(), im.h, im.w, cpu_mask.data(), cpu_model.data(), options);
    const std::vector<std::uint8_t> gpu_mask = mask_of(*d, all_masks, b);
    std::int64_t differing = 0;
    for (std::size_t p = 0; p < gpu_mask.size(); ++p) differing += gpu_mask[p] != cpu_mask[p];
    std::int64_t fg = 0;
    for (auto v : cpu_mask) fg += v & 1;
    EXPECT_EQ(differing, 0) << describe(im, b) << ": " << differing << " of " << gpu_mask.size()
                            << " mask pixels differ (CPU iterations " << stats.iterations << ")";
    const std::vector<double> g(gpu_models.begin() + static_cast<std::ptrdiff_t>(b * row),
                                gpu_models.begin() + static_cast<std::ptrdiff_t>((b + 1) * row));
    const std::int64_t md = first_difference(g, cpu_model);
    EXPECT_EQ(md, -1) << describe(im, b) << ": model differs at double " << md << " (gpu "
                      << (md >= 0 ? g[static_cast<std::size_t>(md)] : 0.0) << ", cpu "
                      << (md >= 0 ? cpu_model[static_cast<std::size_t>(md)] : 0.0) << ")";
    // A GrabCut that did nothing would pass the comparison as well: record it.
    ::testing::Test::RecordProperty("fg_" + std::to_string(b), std::to_string(fg));
    result.masks.push_back(gpu_mask);
    result.models.push_back(g);
  }
  return result;
}

std::vector<HostImage> driver_batch(const std::vector<Size>& sizes, std::mt19937& rng, bool trimap) {
  std::vector<HostImage> out;
  for (const Size& s : sizes) {
    HostImage im;
    im.h = s.h;
    im.w = s.w;
    im.image = make_image(s.h, s.w, rng, false);
    im.mask = trimap ? random_trimap(s.h, s.w, rng) : box_mask(s.h, s.w);
    out.push_back(std::move(im));
  }
  return out;
}

const std::vector<Size> kDriverSizes = {{31, 33}, {200, 300}, {640, 480}};
const std::vector<Size> kMixedSizes = {{31, 33}, {1, 257}, {257, 1}, {200, 300}, {0, 7}, {120, 90}, {2, 2}};

}  // namespace

TEST(Driver, BoxInitMatchesCpu) {
  std::mt19937 rng(11);
  for (const auto& sizes : {kDriverSizes, kMixedSizes}) {
    GrabCutOptions o;
    o.max_iter = 5;
    check_driver(driver_batch(sizes, rng, /*trimap=*/sizes.size() > 3), o, {});
  }
}

// The masks do not depend on the max-flow's schedule (its cut is unique): relabels never
// capped and capped at 2 sweeps (fixed, and doubled when too short), and the batches'
// region schedule with warm starts' reverse phase (and with the band of visited labels,
// the relabels' rim lists and longer visits relaxed every 16 rounds), called directly
// and captured into a CUDA graph, give grabcut_cpu's results (the other tests run the
// default schedule, capped at 12 and doubled when too short, or the environment's:
// test_schedule.h).
TEST(Driver, EveryScheduleMatchesCpu) {
  for (int variant = 0; variant < 5; ++variant) {
    grabcut::cuda::MaxflowSchedule schedule;
    if (variant >= 3) {
      schedule = grabcut::cuda::region_schedule(/*checkerboard=*/true);
      schedule.reverse_warm = true;
      schedule.band = variant == 4 ? 4 : 0;
      schedule.rim_lists = variant == 4;
      if (variant == 4) {  // longer visits, exact heights again after 16 rounds
        schedule.local_rounds = 24;
        schedule.relax_every = 16;
      }
    }
    schedule.bfs_cap = variant == 0 ? 0 : (variant >= 3 ? schedule.bfs_cap : 2);
    schedule.grow_cap = variant >= 2;
    SCOPED_TRACE("cap " + std::to_string(schedule.bfs_cap) + (schedule.grow_cap ? " growing" : "") +
                 (schedule.reverse_warm ? " region checkerboard reverse warm" : "") +
                 (schedule.band > 0 ? " band " + std::to_string(schedule.band) : "") +
                 (schedule.rim_lists ? " rim lists" : "") +
                 (schedule.relax_every > 0 ? " 24 rounds, relax every 16" : ""));
    std::mt19937 rng(17);
    GrabCutOptions o;
    o.max_iter = 5;
    check_driver(driver_batch(kMixedSizes, rng, /*trimap=*/true), o, {}, Launch::kDirect, schedule);
    check_driver(driver_batch({{200, 300}}, rng, /*trimap=*/false), o, {}, Launch::kGraph, schedule);
  }
}

TEST(Driver, SingleImagesMatchCpu) {
  std::mt19937 rng(12);
  for (const Size s : kDriverSizes) {
    GrabCutOptions o;
    o.max_iter = 5;
    check_driver(driver_batch({s}, rng, false), o, {});
  }
}

TEST(Driver, TrimapSeedsAndOptionsMatchCpu) {
  std::mt19937 rng(13);
  const std::vector<std::uint64_t> seeds = {0, 1, 0xDEADBEEFULL};
  for (std::uint64_t seed : seeds) {
    GrabCutOptions o;
    o.seed = seed;
    o.max_iter = 6;
    check_driver(driver_batch(kMixedSizes, rng, true), o, {});
  }
  GrabCutOptions o3;
  o3.components = 3;
  o3.gamma = 25.0;
  o3.max_iter = 4;
  check_driver(driver_batch(kDriverSizes, rng, true), o3, {});
  GrabCutOptions o1;
  o1.components = 1;
  o1.max_iter = 3;
  check_driver(driver_batch(kMixedSizes, rng, true), o1, {});
  GrabCutOptions o0;
  o0.max_iter = 0;  // init only: the model
  check_driver(driver_batch(kMixedSizes, rng, true), o0, {});
}

TEST(Driver, FreezeModelMatchesCpu) {
  std::mt19937 rng(14);
  GrabCutOptions o;
  o.freeze_model = true;
  o.max_iter = 4;
  check_driver(driver_batch(kMixedSizes, rng, true), o, {});
}

TEST(Driver, EvalModeMatchesCpu) {
  std::mt19937 rng(15);
  std::vector<HostImage> imgs = driver_batch({{31, 33}, {200, 300}, {40, 40}, {257, 1}, {64, 80}}, rng, true);
  // Models learnt by an init-only CPU run on the trimaps.
  std::vector<std::vector<double>> models;
  GrabCutOptions init;
  init.max_iter = 0;
  for (auto& im : imgs) {
    std::vector<double> m(2 * init.components * kParamsPerComponent);
    std::vector<std::uint8_t> mask = im.mask;
    grabcut::grabcut_cpu(im.image.data(), im.h, im.w, mask.data(), m.data(), init);
    models.push_back(m);
  }
  // A 1x1 image evaluated with the 40x40 image's model.
  imgs[2].h = 1;
  imgs[2].w = 1;
  imgs[2].image = {10, 200, 30};
  imgs[2].mask = {grabcut::kProbForeground};
  // Eval on fresh trimaps (other masks than the models came from).
  for (std::size_t b = 0; b < imgs.size(); ++b)
    if (b != 2) imgs[b].mask = random_trimap(imgs[b].h, imgs[b].w, rng);
  for (int freeze = 0; freeze < 2; ++freeze) {
    GrabCutOptions o;
    o.init_model = false;
    o.freeze_model = freeze != 0;
    o.max_iter = 5;
    check_driver(imgs, o, models);
  }
}

TEST(Driver, DeterministicAcrossRuns) {
  std::mt19937 rng(16);
  const std::vector<HostImage> imgs = driver_batch({{200, 300}, {31, 33}, {640, 480}}, rng, true);
  GrabCutOptions o;
  o.seed = 42;
  const DriverResult a = check_driver(imgs, o, {});
  const DriverResult b = check_driver(imgs, o, {});
  for (std::size_t i = 0; i < imgs.size(); ++i) {
    EXPECT_EQ(a.masks[i], b.masks[i]) << "image " << i;
    EXPECT_EQ(first_difference(a.models[i], b.models[i]), -1) << "image " << i;
  }
}

// More images than one upload chunk of the image table (128), all tiny.
TEST(Driver, ManySmallImagesMatchCpu) {
  std::mt19937 rng(18);
  std::vector<Size> sizes;
  std::uniform_int_distribution<int> dim(2, 12);
  for (int i = 0; i < 300; ++i) sizes.push_back({dim(rng), dim(rng)});
  GrabCutOptions o;
  o.seed = 3;
  check_driver(driver_batch(sizes, rng, true), o, {});
}

// The whole driver (max-flow included) captured into a CUDA graph: proves that it
// queues everything on the stream without host synchronisation, and that replays
// give the CPU's result.
TEST(Driver, CudaGraphCaptureMatchesCpu) {
#if defined(GRABCUT_TEST_HOST_MAXFLOW)
  GTEST_SKIP() << "the host max-flow stand-in synchronises";
#else
  std::mt19937 rng(19);
  GrabCutOptions o;
  o.seed = 9;
  check_driver(driver_batch({{200, 300}, {31, 33}, {0, 4}, {120, 90}}, rng, true), o, {}, Launch::kGraph);
  GrabCutOptions frozen;
  frozen.max_iter = 3;
  frozen.freeze_model = true;
  check_driver(driver_batch({{64, 48}, {1, 257}}, rng, true), frozen, {}, Launch::kGraph);
#endif
}

// k-means' scratch (20 bytes a pixel) shares its bytes with the max-flow's state (33),
// so starting from a box costs no more device memory than starting from a model; the
// whole call's workspace stays under 60 bytes a pixel (it was 80 with them apart). The
// Driver tests above check that sharing changes no result (their workspaces start as
// 0xCD garbage, and the cold solve after k-means finds k-means' data in its bytes).
TEST(Driver, KmeansScratchSharesMaxflowBytes) {
  for (const auto& [height, width] : {std::pair{1024, 1024}, std::pair{480, 640}, std::pair{1, 4096}}) {
    BatchLayout layout;
    layout.pitch_height = height;
    layout.pitch_width = width;
    layout.add(height, width);
    GrabCutOptions box;
    GrabCutOptions model;
    model.init_model = false;
    const std::size_t with_kmeans = grabcut::cuda::grabcut_workspace_bytes(layout, box);
    const std::size_t without = grabcut::cuda::grabcut_workspace_bytes(layout, model);
    EXPECT_EQ(with_kmeans, without) << height << "x" << width;
    if (height * width >= 100000) {
      const double per_pixel = static_cast<double>(with_kmeans) / (static_cast<double>(height) * width);
      EXPECT_LT(per_pixel, 60.0) << height << "x" << width;
    }
  }
}

TEST(Driver, WorkspaceTooSmallThrows) {
  std::mt19937 rng(17);
  auto imgs = driver_batch({{31, 33}}, rng, false);
  auto d = upload_batch_data(imgs);
  GrabCutOptions o;
  const std::size_t bytes = grabcut::cuda::grabcut_workspace_bytes(d->layout, o);
  DeviceArray<unsigned char> workspace(bytes);
  DeviceArray<double> models(2 * o.components * kParamsPerComponent);
  EXPECT_THROW(grabcut::cuda::grabcut(d->layout, d->images.get(), d->masks.get(), models.get(), workspace.get(),
                                           bytes / 2, o, nullptr),
               std::invalid_argument);
}


// Small and odd shapes (scripts/gpu_check.sh runs the OddSizes tests under compute-sanitizer's
// memcheck, racecheck, synccheck and initcheck): each shape alone, then all of them in one batch.
// A fit needs both classes, so the smallest shapes are 1x2 and 2x1 (random_trimap puts a
// background pixel first and a probable-foreground pixel last); a single pixel goes
// through the evaluation-only path in Driver.EvalModeMatchesCpu.
TEST(OddSizes, DriverEachShapeAlone) {
  std::mt19937 rng(21);
  for (const Size s : {Size{1, 2}, Size{2, 1}, Size{31, 33}, Size{1, 4096}, Size{4096, 1}}) {
    GrabCutOptions o;
    o.max_iter = 3;
    check_driver(driver_batch({s}, rng, /*trimap=*/true), o, {});
  }
}

TEST(OddSizes, DriverMixedBatch) {
  std::mt19937 rng(22);
  GrabCutOptions o;
  o.max_iter = 3;
  check_driver(driver_batch({{1, 2}, {31, 33}, {1, 4096}, {4096, 1}, {0, 3}, {2, 1}, {17, 5}, {2, 2}}, rng, true), o,
               {});
}
