// The stage scratch of cuda/scratch.h.
#include <algorithm>

#include "cuda/gmm.h"
#include "cuda/scratch.h"

namespace grabcut::cuda {

StageScratch carve_stage_scratch(const BatchLayout& layout, int k, bool kmeans, WorkspaceCarver& carver) {
  layout.check();
  const std::int64_t total = layout.total_pixels();
  const auto batch = static_cast<std::size_t>(layout.batch());
  const auto slots = static_cast<std::size_t>(2 * k);
  StageScratch s;
  s.images = carver.take<BatchImage>(std::max<std::size_t>(batch, 1));
  s.flags.active = carver.take<std::int32_t>(std::max<std::size_t>(batch, 1));
  s.flags.has_previous = carver.take<std::int32_t>(std::max<std::size_t>(batch, 1));
  s.flags.mask_changed = carver.take<std::int32_t>(std::max<std::size_t>(batch, 1));
  s.flags.comp_changed = carver.take<std::int32_t>(std::max<std::size_t>(batch, 1));
  s.flags.prev_mask_changed = carver.take<std::int32_t>(std::max<std::size_t>(batch, 1));
  s.ssd = carver.take<std::int64_t>(std::max<std::size_t>(batch, 1));
  s.sums = carver.take<std::int64_t>(std::max<std::size_t>(batch * slots * detail::kSumFields, 1));
  s.evals = carver.take<ComponentEval>(std::max<std::size_t>(batch * slots, 1));
  if (kmeans) carve_kmeans_scratch(layout, k, carver, s);
  return s;
}

void carve_kmeans_scratch(const BatchLayout& layout, int k, WorkspaceCarver& carver, StageScratch& s) {
  const std::int64_t total = layout.total_pixels();
  const auto batch = static_cast<std::size_t>(layout.batch());
  const auto slots = static_cast<std::size_t>(2 * k);
  s.scan = carver.take<std::int64_t>(std::max<std::size_t>(2 * static_cast<std::size_t>(total), 1));
  s.dist = carver.take<std::int32_t>(std::max<std::size_t>(static_cast<std::size_t>(total), 1));
  s.seeds = carver.take<std::int32_t>(std::max<std::size_t>(batch * slots * 3, 1));
  s.centers = carver.take<double>(std::max<std::size_t>(batch * slots * 3, 1));
  s.cub_temp_bytes = kmeans_scan_temp_bytes(total);
  s.cub_temp = carver.take<unsigned char>(s.cub_temp_bytes);
}

}  // namespace grabcut::cuda
