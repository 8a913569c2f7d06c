// The device memory of the GrabCut stages: carved out of one caller-given
// workspace (no allocation inside the library), in one place so that sizing it and
// using it always agree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/gmm.h"
#include "cuda/batch.h"

namespace grabcut::cuda {

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

  // Carves buffers that are never in use at the same time out of the same bytes: each
  // carve(*this) starts at the current offset, and the carver then moves past the
  // largest.
  template <class... Carve>
  void overlay(Carve&&... carve) {
    used_ = (used_ + kAlignment - 1) / kAlignment * kAlignment;
    const std::size_t start = used_;
    std::size_t end = start;
    const auto one = [&](auto&& f) {
      used_ = start;
      f(*this);
      end = used_ > end ? used_ : end;
    };
    (one(carve), ...);
    used_ = end;
  }

 private:
  char* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t used_ = 0;
};

namespace detail {
// ColorSums as 10 int64: count, sum[3], prod[6].
constexpr int kSumFields = 10;
}  // namespace detail

// Per-image device state of the GrabCut loop (batch entries each): the
// IterationHistory of core/driver.h, and what the current iteration changed.
struct BatchFlags {
  std::int32_t* active = nullptr;             // 1 while the image still iterates (0 for empty images)
  std::int32_t* has_previous = nullptr;       // IterationHistory::has_previous
  std::int32_t* mask_changed = nullptr;       // set by update_masks_cuda
  std::int32_t* comp_changed = nullptr;       // set by assign_components_cuda
  std::int32_t* prev_mask_changed = nullptr;  // IterationHistory::previous_mask_changed
};

// Scratch memory of the stages, carved from one workspace.
struct StageScratch {
  BatchImage* images = nullptr;     // batch: the device image table (upload_batch)
  BatchFlags flags;                 // batch each
  std::int64_t* ssd = nullptr;      // batch: sum of squared differences
  std::int64_t* sums = nullptr;     // batch x 2k x kSumFields: ColorSums; kept zero between uses
  ComponentEval* evals = nullptr;   // batch x 2k
  // k-means (only when carved with kmeans = true)
  std::int64_t* scan = nullptr;     // 2 x total_pixels: per (image, class) segments, then their prefix sums
  std::int32_t* dist = nullptr;     // total_pixels: squared distance to the nearest seed so far
  std::int32_t* seeds = nullptr;    // batch x 2 x k x 3 integer seed colours
  double* centers = nullptr;        // batch x 2 x k x 3 k-means centres
  void* cub_temp = nullptr;
  std::size_t cub_temp_bytes = 0;
};

// Carves the stage scratch for a layout (with k-means scratch if asked); a carver
// with a null base only counts. Throws std::invalid_argument on a bad layout.
StageScratch carve_stage_scratch(const BatchLayout& layout, int k, bool kmeans, WorkspaceCarver& carver);

// Carves only the k-means scratch of s (scan, dist, seeds, centers, cub_temp): k-means
// runs once, before any other stage needs its bytes, so a caller may overlay it.
void carve_kmeans_scratch(const BatchLayout& layout, int k, WorkspaceCarver& carver, StageScratch& s);

}  // namespace grabcut::cuda
