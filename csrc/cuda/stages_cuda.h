// The GrabCut stages on the GPU, one launcher per stage, each the batched twin of a
// CPU function of core/gmm.h or core/energy.h with bit-identical results:
//
//   sum_squared_differences_cuda   sum_squared_differences_cpu   (per image, int64)
//   nlinks_cuda                    beta_from_sum + nlinks_cpu
//   kmeans_init_cuda               kmeans_init_cpu
//   assign_components_cuda         assign_components_cpu
//   learn_gmms_cuda                learn_gmms_cpu
//   tlinks_cuda                    tlinks_cpu
//   update_masks_cuda              the mask update of grabcut_cpu's loop
//
// Every launcher runs one launch (or a fixed short sequence of launches) over all
// images of the batch on the given stream and never synchronises with the host.
//
// Layouts. Images and masks are the caller's pitched buffers (driver_cuda.h's
// BatchLayout). Every per-pixel work array (components, terminals, n-links, cut) is
// packed: image b occupies entries offset_b .. offset_b + h_b * w_b - 1, row-major,
// offset_b = sum of h * w of the images before it (the layout of maxflow_cuda.h's
// BatchedGridGraph). Models are batch x 2k x kParamsPerComponent doubles
// (background rows first, as in core/gmm.h).
//
// Images whose `active` flag is 0 are skipped by the stages that change state
// (kmeans, assign, learn, tlinks, mask update): their outputs are left untouched.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/gmm.h"
#include "core/maxflow.h"
#include "cuda/driver_cuda.h"

namespace grabcut::cuda {

// Where image b lives in the packed per-pixel arrays, and its size.
struct DeviceImage {
  std::int64_t offset = 0;
  std::int32_t height = 0;
  std::int32_t width = 0;
};

// Carves aligned sub-buffers out of one block of device memory. With a null base it
// only counts, so one carving function gives both the size and the pointers.
class WorkspaceCarver {
 public:
  static constexpr std::size_t kAlignment = 256;

  WorkspaceCarver(void* base, std::size_t bytes) : base_(static_cast<char*>(base)), bytes_(bytes) {}

  template <typename T>
  T* take(std::size_t count) {
    used_ = (used_ + kAlignment - 1) / kAlignment * kAlignment;
    if (count > (std::numeric_limits<std::size_t>::max() - used_) / sizeof(T))
      throw std::invalid_argument("workspace: size overflow");
    const std::size_t start = used_;
    used_ += count * sizeof(T);
    if (base_ == nullptr) return nullptr;
    if (used_ > bytes_) {
      throw std::invalid_argument("workspace: expected at least " + std::to_string(used_) + " bytes, got " +
                                  std::to_string(bytes_));
    }
    return reinterpret_cast<T*>(base_ + start);
  }
  std::size_t used() const { return used_; }

 private:
  char* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t used_ = 0;
};

// Per-image device state flags of the driver's loop (batch entries each).
struct BatchFlags {
  std::int32_t* active = nullptr;        // 1 while the image still iterates (0 for empty images)
  std::int32_t* has_previous = nullptr;  // a previous component assignment exists
  std::int32_t* mask_changed = nullptr;  // set by update_masks_cuda
  std::int32_t* comp_changed = nullptr;  // set by assign_components_cuda
  std::int32_t* prev_mask_changed = nullptr;  // the last iteration changed the mask
};

// Scratch memory of the stages, carved from one workspace.
struct StageScratch {
  DeviceImage* images = nullptr;    // batch
  BatchFlags flags;                 // batch each
  std::int64_t* ssd = nullptr;      // batch: sum of squared differences
  std::int64_t* sums = nullptr;     // batch x 2k x 10: ColorSums (count, sum[3], prod[6]); kept zero between uses
  ComponentEval* evals = nullptr;   // batch x 2k
  // k-means (only when carved with kmeans = true)
  std::int64_t* scan = nullptr;     // 2 x total_pixels: per (image, class) segments, then their prefix sums
  std::int32_t* dist = nullptr;     // total_pixels: squared distance to the nearest seed so far
  std::int32_t* seeds = nullptr;    // batch x 2 x k x 3 integer seed colours
  double* centers = nullptr;        // batch x 2 x k x 3 k-means centres
  void* cub_temp = nullptr;
  std::size_t cub_temp_bytes = 0;
};

// Bytes of CUB temp storage of the k-means scan over 2 * total_pixels int64.
std::size_t kmeans_scan_temp_bytes(std::int64_t total_pixels);

// Carves the stage scratch for a layout (with kmeans scratch if asked); a carver
// with a null base only counts.
StageScratch carve_stage_scratch(const BatchLayout& layout, int k, bool kmeans, WorkspaceCarver& carver);

// What every launcher needs to know about the batch. Built on the host from the
// layout (no device access); `images` points at the device copy of the image table.
struct StageBatch {
  int batch = 0;
  std::int32_t pitch_height = 0;
  std::int32_t pitch_width = 0;
  std::int64_t total_pixels = 0;  // packed
  std::int64_t max_pixels = 0;    // largest h * w
  const DeviceImage* images = nullptr;
  const std::int32_t* active = nullptr;  // null: every image is active
};

// Host-side packed offsets of a layout (one DeviceImage per image).
std::vector<DeviceImage> pack_layout(const BatchLayout& layout);

// Writes the image table into scratch.images (through kernel parameters: no host
// buffer has to outlive the call, and it works inside CUDA graph capture) and
// returns the batch description. Throws std::invalid_argument on a bad layout.
StageBatch upload_batch(const BatchLayout& layout, const StageScratch& scratch, cudaStream_t stream);

// Sets active = (h * w > 0), has_previous = has_previous_value, the changed flags 0.
void init_flags_cuda(const StageBatch& batch, const BatchFlags& flags, int has_previous_value, cudaStream_t stream);

// ssd[b] = sum_squared_differences_cpu(image b).
void sum_squared_differences_cuda(const StageBatch& batch, const std::uint8_t* images, std::int64_t* ssd,
                                  cudaStream_t stream);

// nlink[d] (packed) = nlinks_cpu(image b, gamma, beta_from_sum(ssd[b], h, w)).
void nlinks_cuda(const StageBatch& batch, const std::uint8_t* images, double gamma, const std::int64_t* ssd,
                 std::int32_t* const nlink[kNumForwardDirections], cudaStream_t stream);

// component (packed) = kmeans_init_cpu(image b, mask b, k, seed) for each active
// image. Uses scratch.scan/dist/seeds/centers/sums/cub_temp (carved with kmeans).
// An image with an empty class (which the CPU rejects) gets some components in
// range; nothing is read or written out of bounds.
void kmeans_init_cuda(const StageBatch& batch, const std::uint8_t* images, const std::uint8_t* masks, int k,
                      std::uint64_t seed, std::uint8_t* component, const StageScratch& scratch,
                      cudaStream_t stream);

// component (packed) = assign_components_cpu(image b, mask b, model b). If
// comp_changed is not null, comp_changed[b] is set to 1 when a component changed.
void assign_components_cuda(const StageBatch& batch, const std::uint8_t* images, const std::uint8_t* masks, int k,
                            const double* models, std::uint8_t* component, ComponentEval* evals,
                            std::int32_t* comp_changed, cudaStream_t stream);

// model b = learn_gmms_cpu(image b, mask b, components). sums must be zero on entry
// (batch x 2k x 10 int64) and is zero again on return.
void learn_gmms_cuda(const StageBatch& batch, const std::uint8_t* images, const std::uint8_t* masks, int k,
                     const std::uint8_t* component, double* models, std::int64_t* sums, cudaStream_t stream);

// evals[b * 2k + i] = prepare_component(row i of model b), for active images.
void prepare_evals_cuda(const StageBatch& batch, int k, const double* models, ComponentEval* evals,
                        cudaStream_t stream);

// terminal (packed) = tlinks_cpu(image b, mask b, model b, gamma).
void tlinks_cuda(const StageBatch& batch, const std::uint8_t* images, const std::uint8_t* masks, int k,
                 const double* models, double gamma, ComponentEval* evals, std::int32_t* terminal,
                 cudaStream_t stream);

// Probable pixels become kProbForeground where source_side (packed) is 1, else
// kProbBackground; hard pixels never change. mask_changed[b] (if not null) is set
// to 1 when a label changed.
void update_masks_cuda(const StageBatch& batch, std::uint8_t* masks, const std::uint8_t* source_side,
                       std::int32_t* mask_changed, cudaStream_t stream);

// End of a GrabCut iteration, mirroring grabcut_cpu's stopping rule per image:
// with freeze_model an image stops after one iteration, otherwise when neither its
// mask nor (given a previous assignment) its components changed. Then
// has_previous = 1 and the changed flags are cleared.
void end_iteration_cuda(const StageBatch& batch, const BatchFlags& flags, bool freeze_model, cudaStream_t stream);


// ---- Helpers shared by the stage files (not part of the interface). ----
namespace detail {

constexpr int kThreads = 256;
// Pixels per block of the reduction kernels: with 4096 pixels a block's sums of
// colours and colour products (at most 4096 * 255 * 255) fit in uint32 shared
// accumulators; they are then added into the int64 totals.
constexpr int kPixelsPerThread = 16;
constexpr int kChunk = kThreads * kPixelsPerThread;
// ColorSums as 10 int64: count, sum[3], prod[6].
constexpr int kSumFields = 10;
constexpr int kMaxGridY = 65535;

// Grid over (pixels of the largest image in blocks of `per_block`, images).
inline dim3 pixel_grid(const StageBatch& batch, std::int64_t per_block) {
  const std::int64_t blocks = (batch.max_pixels + per_block - 1) / per_block;
  if (blocks > std::numeric_limits<std::int32_t>::max()) throw std::invalid_argument("image: too many pixels");
  return dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(batch.batch < kMaxGridY ? batch.batch : kMaxGridY), 1);
}

inline bool has_work(const StageBatch& batch) { return batch.batch > 0 && batch.max_pixels > 0; }

#if defined(__CUDACC__)
// Copies image b's 2k prepared components into shared memory (call from all threads,
// then __syncthreads). ComponentEval has default member initialisers, so shared
// arrays of it are declared as raw storage.
__device__ __forceinline__ void load_evals(const ComponentEval* evals, int b, int k, ComponentEval* shared) {
  for (int i = static_cast<int>(threadIdx.x); i < 2 * k; i += static_cast<int>(blockDim.x))
    shared[i] = evals[static_cast<std::int64_t>(b) * 2 * k + i];
}

__device__ __forceinline__ bool is_active(const StageBatch& batch, int b) {
  return batch.active == nullptr || batch.active[b] != 0;
}

// Index of channel c of pixel (y, x) of image b in the pitched image buffer.
__device__ __forceinline__ std::int64_t image_index(const StageBatch& batch, int b, int c, int y, int x) {
  return ((static_cast<std::int64_t>(b) * 3 + c) * batch.pitch_height + y) * batch.pitch_width + x;
}
__device__ __forceinline__ std::int64_t mask_index(const StageBatch& batch, int b, int y, int x) {
  return (static_cast<std::int64_t>(b) * batch.pitch_height + y) * batch.pitch_width + x;
}
__device__ __forceinline__ void load_color(const StageBatch& batch, const std::uint8_t* images, int b, int y, int x,
                                           int color[3]) {
  const std::int64_t plane = static_cast<std::int64_t>(batch.pitch_height) * batch.pitch_width;
  const std::int64_t i = image_index(batch, b, 0, y, x);
  color[0] = images[i];
  color[1] = images[i + plane];
  color[2] = images[i + 2 * plane];
}
#endif

}  // namespace detail

}  // namespace grabcut::cuda
