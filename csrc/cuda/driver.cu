// The GrabCut loop for a batch of images on the GPU, stage for stage the twin of
// core/driver.cpp's grabcut_cpu.
//
// Every launch covers the whole batch; all scratch memory is carved from the
// caller's workspace; all work is queued on the caller's stream. There is no host
// synchronisation anywhere in this file: the per-image stopping rule of
// grabcut_cpu (an image stops when an iteration changes neither its mask nor its
// components, or after one iteration with a frozen model) is kept on the device as
// per-image `active` flags, which every stage reads to skip stopped images. So the
// host queues all max_iter iterations without reading anything back, and each
// image ends in exactly the state grabcut_cpu leaves it in. (Whether the GPU max-
// flow synchronises internally is documented in maxflow.cu.)
#include <algorithm>
#include <string>

#include "core/driver.h"
#include "core/energy.h"
#include "cuda/check.h"
#include "cuda/driver_cuda.h"
#include "cuda/maxflow_cuda.h"
#include "cuda/stages_cuda.h"

namespace grabcut::cuda {
namespace {

constexpr int kUploadChunk = 128;

struct ImageTableChunk {
  DeviceImage items[kUploadChunk];
  int start;
  int count;
};

__global__ void upload_images_kernel(ImageTableChunk chunk, DeviceImage* images) {
  const int i = static_cast<int>(threadIdx.x);
  if (i < chunk.count) images[chunk.start + i] = chunk.items[i];
}

__global__ void init_flags_kernel(StageBatch batch, BatchFlags flags, int has_previous_value) {
  const int b = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (b >= batch.batch) return;
  const DeviceImage im = batch.images[b];
  flags.active[b] = (im.height > 0 && im.width > 0) ? 1 : 0;
  flags.has_previous[b] = has_previous_value;
  flags.mask_changed[b] = 0;
  flags.comp_changed[b] = 0;
  flags.prev_mask_changed[b] = 0;
}

__global__ void __launch_bounds__(detail::kThreads) update_masks_kernel(StageBatch batch, std::uint8_t* masks,
                                                                        const std::uint8_t* source_side,
                                                                        std::int32_t* mask_changed) {
  for (int b = static_cast<int>(blockIdx.y); b < batch.batch; b += static_cast<int>(gridDim.y)) {
    const DeviceImage im = batch.images[b];
    const std::int64_t n = static_cast<std::int64_t>(im.height) * im.width;
    const std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (p >= n || !detail::is_active(batch, b)) continue;
    const int y = static_cast<int>(p / im.width);
    const int x = static_cast<int>(p - static_cast<std::int64_t>(y) * im.width);
    const std::int64_t m = detail::mask_index(batch, b, y, x);
    const std::uint8_t old_label = masks[m];
    if (!is_probable_label(old_label)) continue;
    const std::uint8_t label = source_side[im.offset + p] ? kProbForeground : kProbBackground;
    if (label != old_label) {
      masks[m] = label;
      if (mask_changed != nullptr) mask_changed[b] = 1;
    }
  }
}

__global__ void end_iteration_kernel(StageBatch batch, BatchFlags flags, bool freeze_model) {
  const int b = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (b >= batch.batch || flags.active[b] == 0) return;
  if (freeze_model) {
    flags.active[b] = 0;
  } else if (flags.mask_changed[b] == 0 && flags.prev_mask_changed[b] == 0 && flags.has_previous[b] != 0 &&
             flags.comp_changed[b] == 0) {
    flags.active[b] = 0;  // the stopping rule of grabcut_cpu: see core/driver.cpp
  }
  flags.prev_mask_changed[b] = flags.mask_changed[b];
  flags.has_previous[b] = 1;
  flags.mask_changed[b] = 0;
  flags.comp_changed[b] = 0;
}

unsigned blocks_for(std::int64_t threads, int per_block) {
  return static_cast<unsigned>((threads + per_block - 1) / per_block);
}

// Everything grabcut_cuda carves from its workspace, in one place so that
// grabcut_workspace_bytes and grabcut_cuda always agree.
struct DriverBuffers {
  StageScratch scratch;
  std::uint8_t* component = nullptr;
  std::uint8_t* source_side = nullptr;
  std::int32_t* terminal = nullptr;
  std::int32_t* nlink[kNumForwardDirections] = {nullptr, nullptr, nullptr, nullptr};
  std::int64_t* flows = nullptr;
  void* maxflow_workspace = nullptr;
  std::size_t maxflow_workspace_bytes = 0;
};

// The max-flow batch: the non-empty images (an empty graph has nothing to cut).
std::vector<GridDesc> graph_descs(const std::vector<DeviceImage>& packed) {
  std::vector<GridDesc> desc;
  for (const DeviceImage& im : packed) {
    if (im.height <= 0 || im.width <= 0) continue;
    GridDesc d;
    d.offset = im.offset;
    d.height = im.height;
    d.width = im.width;
    desc.push_back(d);
  }
  return desc;
}

DriverBuffers carve_driver(const BatchLayout& layout, const GrabCutOptions& options,
                           const std::vector<GridDesc>& desc, std::int64_t total_pixels, WorkspaceCarver& carver) {
  DriverBuffers buf;
  buf.scratch = carve_stage_scratch(layout, options.components, options.init_model, carver);
  const auto total = static_cast<std::size_t>(total_pixels);
  buf.component = carver.take<std::uint8_t>(total);
  buf.source_side = carver.take<std::uint8_t>(total);
  buf.terminal = carver.take<std::int32_t>(total);
  for (int d = 0; d < kNumForwardDirections; ++d) buf.nlink[d] = carver.take<std::int32_t>(total);
  buf.flows = carver.take<std::int64_t>(std::max<std::size_t>(desc.size(), 1));
  if (!desc.empty()) {
    buf.maxflow_workspace_bytes = maxflow_workspace_bytes(desc);
    buf.maxflow_workspace = carver.take<unsigned char>(buf.maxflow_workspace_bytes);
  }
  return buf;
}

}  // namespace

// ---- stage helpers declared in stages_cuda.h ----

std::vector<DeviceImage> pack_layout(const BatchLayout& layout) {
  if (layout.pitch_height < 0 || layout.pitch_width < 0) {
    throw std::invalid_argument("layout: expected a non-negative pitch, got " + std::to_string(layout.pitch_height) +
                                " x " + std::to_string(layout.pitch_width));
  }
  std::vector<DeviceImage> packed(layout.extents.size());
  std::int64_t offset = 0;
  for (std::size_t b = 0; b < layout.extents.size(); ++b) {
    const ImageExtent& e = layout.extents[b];
    if (e.height < 0 || e.width < 0 || e.height > layout.pitch_height || e.width > layout.pitch_width) {
      throw std::invalid_argument("layout: image " + std::to_string(b) + " is " + std::to_string(e.height) + " x " +
                                  std::to_string(e.width) + ", expected within the pitch " +
                                  std::to_string(layout.pitch_height) + " x " + std::to_string(layout.pitch_width));
    }
    packed[b].offset = offset;
    packed[b].height = e.height;
    packed[b].width = e.width;
    offset += static_cast<std::int64_t>(e.height) * e.width;
  }
  return packed;
}

StageScratch carve_stage_scratch(const BatchLayout& layout, int k, bool kmeans, WorkspaceCarver& carver) {
  const std::vector<DeviceImage> packed = pack_layout(layout);
  std::int64_t total = 0;
  for (const DeviceImage& im : packed) total += static_cast<std::int64_t>(im.height) * im.width;
  const auto batch = static_cast<std::size_t>(layout.batch());
  const auto slots = static_cast<std::size_t>(2 * k);
  StageScratch s;
  s.images = carver.take<DeviceImage>(std::max<std::size_t>(batch, 1));
  s.flags.active = carver.take<std::int32_t>(std::max<std::size_t>(batch, 1));
  s.flags.has_previous = carver.take<std::int32_t>(std::max<std::size_t>(batch, 1));
  s.flags.mask_changed = carver.take<std::int32_t>(std::max<std::size_t>(batch, 1));
  s.flags.comp_changed = carver.take<std::int32_t>(std::max<std::size_t>(batch, 1));
  s.flags.prev_mask_changed = carver.take<std::int32_t>(std::max<std::size_t>(batch, 1));
  s.ssd = carver.take<std::int64_t>(std::max<std::size_t>(batch, 1));
  s.sums = carver.take<std::int64_t>(std::max<std::size_t>(batch * slots * detail::kSumFields, 1));
  s.evals = carver.take<ComponentEval>(std::max<std::size_t>(batch * slots, 1));
  if (kmeans) {
    s.scan = carver.take<std::int64_t>(std::max<std::size_t>(2 * static_cast<std::size_t>(total), 1));
    s.dist = carver.take<std::int32_t>(std::max<std::size_t>(static_cast<std::size_t>(total), 1));
    s.seeds = carver.take<std::int32_t>(std::max<std::size_t>(batch * slots * 3, 1));
    s.centers = carver.take<double>(std::max<std::size_t>(batch * slots * 3, 1));
    s.cub_temp_bytes = kmeans_scan_temp_bytes(total);
    s.cub_temp = carver.take<unsigned char>(s.cub_temp_bytes);
  }
  return s;
}

StageBatch upload_batch(const BatchLayout& layout, const StageScratch& scratch, cudaStream_t stream) {
  const std::vector<DeviceImage> packed = pack_layout(layout);
  StageBatch batch;
  batch.batch = layout.batch();
  batch.pitch_height = layout.pitch_height;
  batch.pitch_width = layout.pitch_width;
  batch.images = scratch.images;
  for (const DeviceImage& im : packed) {
    const std::int64_t n = static_cast<std::int64_t>(im.height) * im.width;
    batch.total_pixels += n;
    batch.max_pixels = std::max(batch.max_pixels, n);
  }
  for (std::size_t start = 0; start < packed.size(); start += kUploadChunk) {
    ImageTableChunk chunk{};
    chunk.start = static_cast<int>(start);
    chunk.count = static_cast<int>(std::min<std::size_t>(kUploadChunk, packed.size() - start));
    for (int i = 0; i < chunk.count; ++i) chunk.items[i] = packed[start + static_cast<std::size_t>(i)];
    upload_images_kernel<<<1, kUploadChunk, 0, stream>>>(chunk, scratch.images);
    GRABCUT_CUDA_CHECK_LAUNCH("upload_images_kernel");
  }
  return batch;
}

void init_flags_cuda(const StageBatch& batch, const BatchFlags& flags, int has_previous_value, cudaStream_t stream) {
  if (batch.batch <= 0) return;
  init_flags_kernel<<<blocks_for(batch.batch, 128), 128, 0, stream>>>(batch, flags, has_previous_value);
  GRABCUT_CUDA_CHECK_LAUNCH("init_flags_kernel");
}

void update_masks_cuda(const StageBatch& batch, std::uint8_t* masks, const std::uint8_t* source_side,
                       std::int32_t* mask_changed, cudaStream_t stream) {
  if (!detail::has_work(batch)) return;
  update_masks_kernel<<<detail::pixel_grid(batch, detail::kThreads), detail::kThreads, 0, stream>>>(
      batch, masks, source_side, mask_changed);
  GRABCUT_CUDA_CHECK_LAUNCH("update_masks_kernel");
}

void end_iteration_cuda(const StageBatch& batch, const BatchFlags& flags, bool freeze_model, cudaStream_t stream) {
  if (batch.batch <= 0) return;
  end_iteration_kernel<<<blocks_for(batch.batch, 128), 128, 0, stream>>>(batch, flags, freeze_model);
  GRABCUT_CUDA_CHECK_LAUNCH("end_iteration_kernel");
}

// ---- the driver ----

std::size_t grabcut_workspace_bytes(const BatchLayout& layout, const GrabCutOptions& options) {
  validate_options(options);
  const std::vector<DeviceImage> packed = pack_layout(layout);
  std::int64_t total = 0;
  for (const DeviceImage& im : packed) total += static_cast<std::int64_t>(im.height) * im.width;
  WorkspaceCarver counter(nullptr, 0);
  carve_driver(layout, options, graph_descs(packed), total, counter);
  return counter.used();
}

void grabcut_cuda(const BatchLayout& layout, const std::uint8_t* images, std::uint8_t* masks, double* models,
                  void* workspace, std::size_t workspace_bytes, const GrabCutOptions& options, cudaStream_t stream) {
  validate_options(options);
  const std::vector<DeviceImage> packed = pack_layout(layout);
  if (packed.empty()) return;
  std::int64_t total = 0;
  for (const DeviceImage& im : packed) total += static_cast<std::int64_t>(im.height) * im.width;
  const std::vector<GridDesc> desc = graph_descs(packed);
  if (workspace == nullptr) throw std::invalid_argument("workspace: expected a device buffer, got null");
  WorkspaceCarver carver(workspace, workspace_bytes);
  const DriverBuffers buf = carve_driver(layout, options, desc, total, carver);
  const StageScratch& s = buf.scratch;
  const int k = options.components;

  StageBatch batch = upload_batch(layout, s, stream);
  init_flags_cuda(batch, s.flags, options.init_model ? 1 : 0, stream);
  batch.active = s.flags.active;  // empty images never run, as grabcut_cpu returns at once for them
  GRABCUT_CUDA_CHECK(cudaMemsetAsync(
      s.sums, 0, sizeof(std::int64_t) * static_cast<std::size_t>(layout.batch()) * 2 * k * detail::kSumFields, stream));
  if (total == 0) return;

  if (options.init_model) {
    kmeans_init_cuda(batch, images, masks, k, options.seed, buf.component, s, stream);
    learn_gmms_cuda(batch, images, masks, k, buf.component, models, s.sums, stream);
  } else {
    // grabcut_cpu starts from zero components; only the stopping rule looks at them.
    GRABCUT_CUDA_CHECK(cudaMemsetAsync(buf.component, 0, static_cast<std::size_t>(total), stream));
  }
  if (options.max_iter == 0) return;

  // n-links depend on the image alone: built once for all iterations.
  sum_squared_differences_cuda(batch, images, s.ssd, stream);
  nlinks_cuda(batch, images, options.gamma, s.ssd, buf.nlink, stream);

  BatchedGridGraph graph;
  graph.desc = desc;
  graph.total_pixels = total;
  graph.terminal = buf.terminal;
  for (int d = 0; d < kNumForwardDirections; ++d) graph.nlink[d] = buf.nlink[d];

  for (int iter = 0; iter < options.max_iter; ++iter) {
    if (!options.freeze_model) {
      assign_components_cuda(batch, images, masks, k, models, buf.component, s.evals, s.flags.comp_changed, stream);
      learn_gmms_cuda(batch, images, masks, k, buf.component, models, s.sums, stream);
    }
    tlinks_cuda(batch, images, masks, k, models, options.gamma, s.evals, buf.terminal, stream);
    // Stopped images keep their terminals, so warm starts stay valid for them too.
    maxflow_cuda(graph, buf.source_side, buf.flows, buf.maxflow_workspace, buf.maxflow_workspace_bytes, iter > 0,
                 stream);
    update_masks_cuda(batch, masks, buf.source_side, s.flags.mask_changed, stream);
    end_iteration_cuda(batch, s.flags, options.freeze_model, stream);
  }
}

}  // namespace grabcut::cuda
