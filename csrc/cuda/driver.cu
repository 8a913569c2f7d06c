// The GrabCut loop for a batch of images on the GPU, stage for stage the twin of
// core/driver.cpp's grabcut_cpu.
//
// Every launch covers the whole batch; all scratch memory is carved from the
// caller's workspace; all work is queued on the caller's stream. There is no host
// synchronisation anywhere in this file: the per-image stopping rule that
// grabcut_cpu applies too (core/driver.h's stop_after_iteration) is kept on the
// device as per-image `active` flags (cuda/iteration.h), which every stage
// reads to skip stopped images. So the host queues all max_iter iterations without
// reading anything back, and each image ends in exactly the state grabcut_cpu
// leaves it in. (Whether the GPU max-flow synchronises internally is documented in
// maxflow.cu.)
#include <algorithm>
#include <vector>

#include "core/driver.h"
#include "cuda/check.h"
#include "cuda/driver.h"
#include "cuda/energy.h"
#include "cuda/gmm.h"
#include "cuda/iteration.h"
#include "cuda/maxflow.h"
#include "cuda/maxflow_tile.h"
#include "cuda/scratch.h"

namespace grabcut::cuda {
namespace {

// Everything grabcut carves from its workspace, in one place so that
// grabcut_workspace_bytes and grabcut always agree.
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
std::vector<GridDesc> graph_descs(const BatchLayout& layout) {
  std::vector<GridDesc> desc;
  for (const BatchImage& im : layout.images) {
    if (im.pixels() > 0) desc.push_back(im);
  }
  return desc;
}

DriverBuffers carve_driver(const BatchLayout& layout, const GrabCutOptions& options,
                           const std::vector<GridDesc>& desc, WorkspaceCarver& carver) {
  DriverBuffers buf;
  buf.scratch = carve_stage_scratch(layout, options.components, /*kmeans=*/false, carver);
  const auto total = static_cast<std::size_t>(layout.total_pixels());
  buf.component = carver.take<std::uint8_t>(total);
  buf.source_side = carver.take<std::uint8_t>(total);
  buf.terminal = carver.take<std::int32_t>(total);
  for (int d = 0; d < kNumForwardDirections; ++d) buf.nlink[d] = carver.take<std::int32_t>(total);
  buf.flows = carver.take<std::int64_t>(std::max<std::size_t>(desc.size(), 1));
  // k-means (20 bytes a pixel) is done before the first max-flow solve, which is cold
  // and writes every word of its state before reading it: the two share their bytes.
  carver.overlay(
      [&](WorkspaceCarver& c) {
        if (options.init_model) carve_kmeans_scratch(layout, options.components, c, buf.scratch);
      },
      [&](WorkspaceCarver& c) {
        if (desc.empty()) return;
        buf.maxflow_workspace_bytes = maxflow_workspace_bytes(desc);
        buf.maxflow_workspace = c.take<unsigned char>(buf.maxflow_workspace_bytes);
      });
  return buf;
}

}  // namespace

std::size_t grabcut_workspace_bytes(const BatchLayout& layout, const GrabCutOptions& options) {
  validate_options(options);
  layout.check();
  WorkspaceCarver counter(nullptr, 0);
  carve_driver(layout, options, graph_descs(layout), counter);
  return counter.used();
}

MaxflowSchedule grabcut_schedule(const BatchLayout& layout) {
  // Measured: single graphs, and batches of 49 and 490; the checkerboard paid only in
  // the batches, region heights alone only on large single graphs, and warm starts'
  // reverse phase in the batches (-14% and -18%) but not on one large graph (+4% at the
  // median at 1024x1024; bench/RESULTS.md, session 48). A batch of a few graphs is
  // treated as its largest graph alone.
  constexpr int kCheckerboardMinGraphs = 8;
  if (layout.batch() >= kCheckerboardMinGraphs) {
    MaxflowSchedule batch = region_schedule(/*checkerboard=*/true);
    batch.reverse_warm = true;
    return batch;
  }
  constexpr std::int64_t kRegionMinTiles = 256;
  for (const BatchImage& im : layout.images) {
    const std::int64_t tiles = (static_cast<std::int64_t>(im.width) + tile::kTileW - 1) / tile::kTileW *
                               ((static_cast<std::int64_t>(im.height) + tile::kTileH - 1) / tile::kTileH);
    if (tiles >= kRegionMinTiles) return region_schedule(/*checkerboard=*/false);
  }
  return {};
}

void grabcut(const BatchLayout& layout, const std::uint8_t* images, std::uint8_t* masks, double* models,
             void* workspace, std::size_t workspace_bytes, const GrabCutOptions& options, cudaStream_t stream,
             const MaxflowSchedule& schedule) {
  validate_options(options);
  layout.check();
  if (layout.images.empty()) return;
  const std::int64_t total = layout.total_pixels();
  const std::vector<GridDesc> desc = graph_descs(layout);
  if (workspace == nullptr) throw std::invalid_argument("workspace: expected a device buffer, got null");
  WorkspaceCarver carver(workspace, workspace_bytes);
  const DriverBuffers buf = carve_driver(layout, options, desc, carver);
  const StageScratch& s = buf.scratch;
  const int k = options.components;

  StageBatch batch = upload_batch(layout, s.images, stream);
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
                 stream, schedule);
    update_masks_cuda(batch, masks, buf.source_side, s.flags.mask_changed, stream);
    end_iteration_cuda(batch, s.flags, options.freeze_model, stream);
  }
}

}  // namespace grabcut::cuda
