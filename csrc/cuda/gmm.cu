// Colour GMMs on the GPU: the batched twins of core/gmm.cpp (seeded k-means,
// component assignment, learning). All statistics are integer sums (uint32 per
// block in shared memory, then int64 atomics), so the order of accumulation never
// matters and the results equal the CPU's bit for bit; the per-pixel and
// per-component math is core/gmm.h's, shared with the CPU.
//
// k-means++ seeding, batched: for pick j every pixel writes its weight (pick 0: 1
// for each pixel of the class; later picks: its squared distance to the nearest
// seed so far) into the segment of its (image, class) of one array, and the other
// class's segment gets 0 there; one inclusive integer scan (CUB, exact) over the
// whole array gives every segment's running sums; one thread per (image, class)
// then finds, by binary search, the first pixel in raster order whose running sum
// exceeds kmeans_random(seed, cls, j) % total, exactly as kmeans_one_class does.
#include <cub/device/device_scan.cuh>

#include <string>

#include "core/gmm.h"
#include "cuda/check.h"
#include "cuda/gmm.h"

namespace grabcut::cuda {
namespace {

using detail::kChunk;
using detail::kSumFields;
using detail::kThreads;

constexpr int kMaxSlots = 2 * kMaxComponents;

__device__ __forceinline__ std::int64_t scan_base(const BatchImage& im, int cls) {
  return 2 * im.offset + cls * im.pixels();
}

// ---- k-means ----

// Weights of pick j (see the file comment); for j >= 1 first folds seed j - 1 into
// the nearest-seed distance.
__global__ void __launch_bounds__(kThreads) kmeans_fill_kernel(StageBatch batch, const std::uint8_t* images,
                                                               const std::uint8_t* masks, int k, int j,
                                                               const std::int32_t* seeds, std::int32_t* dist,
                                                               std::int64_t* scan) {
  detail::for_each_thread_pixel(batch, [&](int b, const BatchImage& im, std::int64_t p, detail::PixelPos pos) {
    const int cls = label_class(masks[detail::mask_index(batch, b, pos.y, pos.x)]);
    std::int64_t weight = 0;
    if (detail::is_active(batch, b)) {
      if (j == 0) {
        weight = 1;
      } else {
        int c[3];
        detail::load_color(batch, images, b, pos.y, pos.x, c);
        const std::int32_t* seed = seeds + ((static_cast<std::int64_t>(b) * 2 + cls) * k + (j - 1)) * 3;
        const int d = squared_distance(c, seed);
        std::int32_t current = d;
        if (j > 1) {
          current = dist[im.offset + p];
          if (d < current) current = d;
        }
        dist[im.offset + p] = current;
        weight = current;
      }
    }
    scan[scan_base(im, cls) + p] = weight;
    scan[scan_base(im, 1 - cls) + p] = 0;
  });
}

// One thread per (image, class): chooses seed j from the scanned weights.
__global__ void kmeans_select_kernel(StageBatch batch, const std::uint8_t* images, int k, int j, std::uint64_t seed,
                                     const std::int64_t* scan, std::int32_t* seeds, double* centers) {
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= 2 * static_cast<std::int64_t>(batch.batch)) return;
  const int b = static_cast<int>(t / 2);
  const int cls = static_cast<int>(t % 2);
  const BatchImage im = batch.images[b];
  const std::int64_t n = im.pixels();
  if (!detail::is_active(batch, b) || n == 0) return;
  const std::int64_t start = scan_base(im, cls);
  const std::int64_t end = start + n;
  const std::int64_t prior = start > 0 ? scan[start - 1] : 0;
  const std::int64_t total = scan[end - 1] - prior;
  const std::int64_t row = (static_cast<std::int64_t>(b) * 2 + cls) * k;
  std::int32_t* out = seeds + (row + j) * 3;
  double* out_center = centers + (row + j) * 3;
  int color[3] = {0, 0, 0};
  if (total <= 0) {
    // j == 0: an empty class (rejected by the CPU): some centre, no out-of-bounds
    // access. j > 0: every colour is a centre already; repeat seed 0, as the CPU.
    if (j > 0)
      for (int c = 0; c < 3; ++c) color[c] = seeds[row * 3 + c];
  } else {
    const auto target = static_cast<std::int64_t>(kmeans_random(seed, cls, j) % static_cast<std::uint64_t>(total));
    // First i in [start, end) with scan[i] - prior > target (scan is non-decreasing).
    std::int64_t lo = start;
    std::int64_t hi = end - 1;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (scan[mid] - prior > target) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    const detail::PixelPos pos = detail::pixel_pos(im, lo - start);
    detail::load_color(batch, images, b, pos.y, pos.x, color);
  }
  for (int c = 0; c < 3; ++c) {
    out[c] = color[c];
    out_center[c] = static_cast<double>(color[c]);
  }
}

// Adds a block's uint32 shared accumulators (slots x fields) into the int64 sums.
__device__ __forceinline__ void flush_sums(const unsigned* acc, int slots, int fields, std::int64_t* sums_of_image) {
  for (int i = static_cast<int>(threadIdx.x); i < slots * fields; i += static_cast<int>(blockDim.x)) {
    const unsigned v = acc[i];
    if (v != 0) {
      const int slot = i / fields;
      const int field = i - slot * fields;
      atomicAdd(reinterpret_cast<unsigned long long*>(sums_of_image + slot * kSumFields + field),
                static_cast<unsigned long long>(v));
    }
  }
}

// A Lloyd step's assignment: each pixel to its class's nearest centre, with the
// integer count and colour sums of every cluster (fields 0..3 of sums).
__global__ void __launch_bounds__(kThreads) kmeans_assign_kernel(StageBatch batch, const std::uint8_t* images,
                                                                 const std::uint8_t* masks, int k,
                                                                 const double* centers, std::uint8_t* component,
                                                                 std::int64_t* sums) {
  __shared__ double shared_centers[kMaxSlots * 3];
  __shared__ unsigned acc[kMaxSlots * 4];
  const int slots = 2 * k;
  const std::int64_t begin = detail::chunk_first_pixel();
  detail::for_each_block_image(batch.batch, [&](int b) {
    const BatchImage im = batch.images[b];
    const std::int64_t n = im.pixels();
    if (!detail::is_active(batch, b) || begin >= n) return;  // uniform over the block
    for (int i = static_cast<int>(threadIdx.x); i < slots * 3; i += kThreads) {
      shared_centers[i] = centers[static_cast<std::int64_t>(b) * slots * 3 + i];
    }
    for (int i = static_cast<int>(threadIdx.x); i < slots * 4; i += kThreads) acc[i] = 0;
    __syncthreads();
    for (int r = 0; r < detail::kPixelsPerThread; ++r) {
      const std::int64_t p = begin + static_cast<std::int64_t>(r) * kThreads + threadIdx.x;
      if (p >= n) break;
      const detail::PixelPos pos = detail::pixel_pos(im, p);
      const int cls = label_class(masks[detail::mask_index(batch, b, pos.y, pos.x)]);
      int c[3];
      detail::load_color(batch, images, b, pos.y, pos.x, c);
      const int l = nearest_center(shared_centers + cls * k * 3, k, c[0], c[1], c[2]);
      component[im.offset + p] = static_cast<std::uint8_t>(l);
      unsigned* a = acc + (cls * k + l) * 4;
      atomicAdd(a, 1U);
      atomicAdd(a + 1, static_cast<unsigned>(c[0]));
      atomicAdd(a + 2, static_cast<unsigned>(c[1]));
      atomicAdd(a + 3, static_cast<unsigned>(c[2]));
    }
    __syncthreads();
    flush_sums(acc, slots, 4, sums + static_cast<std::int64_t>(b) * slots * kSumFields);
    __syncthreads();  // shared memory is reused by the next image
  });
}

// A Lloyd step's update, one thread per (image, slot): centre = sum / count unless
// the cluster is empty; the sums are cleared for the next step.
__global__ void kmeans_update_kernel(StageBatch batch, int k, double* centers, std::int64_t* sums) {
  const int slots = 2 * k;
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<std::int64_t>(batch.batch) * slots) return;
  const int b = static_cast<int>(t / slots);
  if (!detail::is_active(batch, b)) return;
  std::int64_t* s = sums + t * kSumFields;
  const std::int64_t count = s[0];
  if (count > 0) {
    for (int c = 0; c < 3; ++c) centers[t * 3 + c] = static_cast<double>(s[1 + c]) / static_cast<double>(count);
  }
  for (int f = 0; f < 4; ++f) s[f] = 0;
}

// ---- assignment and learning ----

__global__ void prepare_evals_kernel(StageBatch batch, int k, const double* models, ComponentEval* evals) {
  const int slots = 2 * k;
  const std::int64_t t = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<std::int64_t>(batch.batch) * slots) return;
  if (!detail::is_active(batch, static_cast<int>(t / slots))) return;
  evals[t] = prepare_component(models + t * kParamsPerComponent);
}

__global__ void __launch_bounds__(kThreads) assign_kernel(StageBatch batch, const std::uint8_t* images,
                                                          const std::uint8_t* masks, int k,
                                                          const ComponentEval* evals, std::uint8_t* component,
                                                          std::int32_t* comp_changed) {
  __shared__ alignas(ComponentEval) unsigned char eval_storage[kMaxSlots * sizeof(ComponentEval)];
  ComponentEval* shared_evals = reinterpret_cast<ComponentEval*>(eval_storage);
  const std::int64_t p = detail::thread_pixel();
  detail::for_each_block_image(batch.batch, [&](int b) {
    const BatchImage im = batch.images[b];
    const std::int64_t n = im.pixels();
    if (!detail::is_active(batch, b) || detail::block_first_pixel() >= n) return;  // uniform over the block
    detail::load_evals(evals, b, k, shared_evals);
    __syncthreads();
    if (p < n) {
      const detail::PixelPos pos = detail::pixel_pos(im, p);
      const int cls = label_class(masks[detail::mask_index(batch, b, pos.y, pos.x)]);
      int c[3];
      detail::load_color(batch, images, b, pos.y, pos.x, c);
      const auto l = static_cast<std::uint8_t>(best_component(shared_evals + cls * k, k, c[0], c[1], c[2]));
      if (comp_changed != nullptr && component[im.offset + p] != l) comp_changed[b] = 1;
      component[im.offset + p] = l;
    }
    __syncthreads();
  });
}

// ColorSums of every (class, component) of every image, into sums (batch x 2k x 10).
__global__ void __launch_bounds__(kThreads) learn_accumulate_kernel(StageBatch batch, const std::uint8_t* images,
                                                                    const std::uint8_t* masks, int k,
                                                                    const std::uint8_t* component,
                                                                    std::int64_t* sums) {
  __shared__ unsigned acc[kMaxSlots * kSumFields];
  const int slots = 2 * k;
  const std::int64_t begin = detail::chunk_first_pixel();
  detail::for_each_block_image(batch.batch, [&](int b) {
    const BatchImage im = batch.images[b];
    const std::int64_t n = im.pixels();
    if (!detail::is_active(batch, b) || begin >= n) return;  // uniform over the block
    for (int i = static_cast<int>(threadIdx.x); i < slots * kSumFields; i += kThreads) acc[i] = 0;
    __syncthreads();
    for (int r = 0; r < detail::kPixelsPerThread; ++r) {
      const std::int64_t p = begin + static_cast<std::int64_t>(r) * kThreads + threadIdx.x;
      if (p >= n) break;
      const detail::PixelPos pos = detail::pixel_pos(im, p);
      const int cls = label_class(masks[detail::mask_index(batch, b, pos.y, pos.x)]);
      int comp = component[im.offset + p];
      if (comp >= k) comp = k - 1;  // never out of bounds, whatever the data
      int c[3];
      detail::load_color(batch, images, b, pos.y, pos.x, c);
      unsigned* a = acc + (cls * k + comp) * kSumFields;
      atomicAdd(a, 1U);
      atomicAdd(a + 1, static_cast<unsigned>(c[0]));
      atomicAdd(a + 2, static_cast<unsigned>(c[1]));
      atomicAdd(a + 3, static_cast<unsigned>(c[2]));
      atomicAdd(a + 4, static_cast<unsigned>(c[0] * c[0]));
      atomicAdd(a + 5, static_cast<unsigned>(c[0] * c[1]));
      atomicAdd(a + 6, static_cast<unsigned>(c[0] * c[2]));
      atomicAdd(a + 7, static_cast<unsigned>(c[1] * c[1]));
      atomicAdd(a + 8, static_cast<unsigned>(c[1] * c[2]));
      atomicAdd(a + 9, static_cast<unsigned>(c[2] * c[2]));
    }
    __syncthreads();
    flush_sums(acc, slots, kSumFields, sums + static_cast<std::int64_t>(b) * slots * kSumFields);
    __syncthreads();
  });
}

constexpr int kFinalizeThreads = 64;
static_assert(kFinalizeThreads >= kMaxSlots, "one thread per slot");
// Blocks of learn_finalize_kernel: one per image up to this many (the blocks stride over
// the images beyond), enough to fill any GPU with these small blocks.
constexpr int kMaxFinalizeBlocks = 65535;

// One block per image: component_from_sums for every slot, then clears the sums.
__global__ void __launch_bounds__(kFinalizeThreads) learn_finalize_kernel(StageBatch batch, int k, double* models,
                                                                          std::int64_t* sums) {
  __shared__ long long shared_sums[kMaxSlots * kSumFields];
  const int slots = 2 * k;
  for (int b = static_cast<int>(blockIdx.x); b < batch.batch; b += static_cast<int>(gridDim.x)) {
    if (!detail::is_active(batch, b)) continue;  // uniform over the block
    std::int64_t* s = sums + static_cast<std::int64_t>(b) * slots * kSumFields;
    for (int i = static_cast<int>(threadIdx.x); i < slots * kSumFields; i += kFinalizeThreads) {
      shared_sums[i] = s[i];
    }
    __syncthreads();
    for (int i = static_cast<int>(threadIdx.x); i < slots * kSumFields; i += kFinalizeThreads) s[i] = 0;
    const int t = static_cast<int>(threadIdx.x);
    if (t < slots) {
      const int cls = t / k;
      std::int64_t class_count = 0;
      for (int j = 0; j < k; ++j) class_count += shared_sums[(cls * k + j) * kSumFields];
      ColorSums cs;
      const long long* f = shared_sums + t * kSumFields;
      cs.count = f[0];
      for (int c = 0; c < 3; ++c) cs.sum[c] = f[1 + c];
      for (int c = 0; c < 6; ++c) cs.prod[c] = f[4 + c];
      component_from_sums(cs, class_count,
                          models + (static_cast<std::int64_t>(b) * slots + t) * kParamsPerComponent);
    }
    __syncthreads();
  }
}

}  // namespace

void check_components(int k) {
  if (k < 1 || k > kMaxComponents) {
    throw std::invalid_argument("components: expected 1.." + std::to_string(kMaxComponents) + ", got " +
                                std::to_string(k));
  }
}

void prepare_evals_cuda(const StageBatch& batch, int k, const double* models, ComponentEval* evals,
                        cudaStream_t stream) {
  check_components(k);
  if (batch.batch <= 0) return;
  const std::int64_t threads = static_cast<std::int64_t>(batch.batch) * 2 * k;
  prepare_evals_kernel<<<detail::blocks_for(threads, 128), 128, 0, stream>>>(batch, k, models, evals);
  GRABCUT_CUDA_CHECK_LAUNCH("prepare_evals_kernel");
}

std::size_t kmeans_scan_temp_bytes(std::int64_t total_pixels) {
  std::size_t bytes = 0;
  const std::int64_t items = total_pixels > 0 ? 2 * total_pixels : 1;
  GRABCUT_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, static_cast<std::int64_t*>(nullptr),
                                                   static_cast<std::int64_t*>(nullptr), items));
  return bytes;
}

void kmeans_init_cuda(const StageBatch& batch, const std::uint8_t* images, const std::uint8_t* masks, int k,
                      std::uint64_t seed, std::uint8_t* component, const StageScratch& scratch,
                      cudaStream_t stream) {
  check_components(k);
  if (!detail::has_work(batch)) return;
  if (scratch.scan == nullptr || scratch.dist == nullptr || scratch.seeds == nullptr || scratch.centers == nullptr) {
    throw std::invalid_argument("kmeans_init_cuda: scratch carved without k-means buffers");
  }
  const std::int64_t scan_items = 2 * batch.total_pixels;
  const dim3 grid = detail::image_grid(batch, kThreads);
  const unsigned select_blocks = detail::blocks_for(2 * static_cast<std::int64_t>(batch.batch), 64);
  for (int j = 0; j < k; ++j) {
    kmeans_fill_kernel<<<grid, kThreads, 0, stream>>>(batch, images, masks, k, j, scratch.seeds, scratch.dist,
                                                      scratch.scan);
    GRABCUT_CUDA_CHECK_LAUNCH("kmeans_fill_kernel");
    std::size_t temp_bytes = scratch.cub_temp_bytes;
    GRABCUT_CUDA_CHECK(cub::DeviceScan::InclusiveSum(scratch.cub_temp, temp_bytes, scratch.scan, scratch.scan,
                                                     scan_items, stream));
    kmeans_select_kernel<<<select_blocks, 64, 0, stream>>>(batch, images, k, j, seed, scratch.scan, scratch.seeds,
                                                           scratch.centers);
    GRABCUT_CUDA_CHECK_LAUNCH("kmeans_select_kernel");
  }
  const dim3 chunk_grid = detail::image_grid(batch, kChunk);
  const unsigned update_blocks = detail::blocks_for(static_cast<std::int64_t>(batch.batch) * 2 * k, 128);
  for (int iter = 0; iter < kKmeansIterations; ++iter) {
    kmeans_assign_kernel<<<chunk_grid, kThreads, 0, stream>>>(batch, images, masks, k, scratch.centers, component,
                                                              scratch.sums);
    GRABCUT_CUDA_CHECK_LAUNCH("kmeans_assign_kernel");
    kmeans_update_kernel<<<update_blocks, 128, 0, stream>>>(batch, k, scratch.centers, scratch.sums);
    GRABCUT_CUDA_CHECK_LAUNCH("kmeans_update_kernel");
  }
}

void assign_components_cuda(const StageBatch& batch, const std::uint8_t* images, const std::uint8_t* masks, int k,
                            const double* models, std::uint8_t* component, ComponentEval* evals,
                            std::int32_t* comp_changed, cudaStream_t stream) {
  check_components(k);
  if (!detail::has_work(batch)) return;
  prepare_evals_cuda(batch, k, models, evals, stream);
  assign_kernel<<<detail::image_grid(batch, kThreads), kThreads, 0, stream>>>(batch, images, masks, k, evals,
                                                                               component, comp_changed);
  GRABCUT_CUDA_CHECK_LAUNCH("assign_kernel");
}

void learn_gmms_cuda(const StageBatch& batch, const std::uint8_t* images, const std::uint8_t* masks, int k,
                     const std::uint8_t* component, double* models, std::int64_t* sums, cudaStream_t stream) {
  check_components(k);
  if (batch.batch <= 0) return;
  if (detail::has_work(batch)) {
    learn_accumulate_kernel<<<detail::image_grid(batch, kChunk), kThreads, 0, stream>>>(batch, images, masks, k,
                                                                                       component, sums);
    GRABCUT_CUDA_CHECK_LAUNCH("learn_accumulate_kernel");
  }
  const auto blocks = static_cast<unsigned>(batch.batch < kMaxFinalizeBlocks ? batch.batch : kMaxFinalizeBlocks);
  learn_finalize_kernel<<<blocks, kFinalizeThreads, 0, stream>>>(batch, k, models, sums);
  GRABCUT_CUDA_CHECK_LAUNCH("learn_finalize_kernel");
}

}  // namespace grabcut::cuda
