// The GrabCut iteration loop on the CPU (the CUDA driver mirrors it stage by stage).
//
// With init_model, the model is first fitted by seeded k-means on the mask's two
// classes (OpenCV's GC_INIT_WITH_RECT / GC_INIT_WITH_MASK); otherwise the given
// model is used (GC_EVAL). Each iteration then (unless freeze_model) assigns every
// pixel to its best component and relearns both mixtures, builds the graph, finds
// the canonical min cut and relabels the probable pixels. The loop stops early
// only at an exact fixed point (components unchanged, and the mask unchanged by
// this iteration and the last), where further iterations would repeat this one.
#pragma once

#include <cstdint>
#include <string>

#include "core/common.h"

namespace grabcut {

struct GrabCutOptions {
  int max_iter = 5;
  int components = kDefaultComponents;
  double gamma = kDefaultGamma;
  std::uint64_t seed = 0;
  bool init_model = true;     // fit the model from the mask first
  bool freeze_model = false;  // never relearn the model (GC_EVAL_FREEZE_MODEL)
  // OpenMP threads for the per-pixel stages and a cold max-flow's strips: 0 takes
  // the calling thread's limit (omp_get_max_threads). Called inside an active
  // parallel region (the images of a batch), a call runs on one thread whatever
  // this says, so that threads never multiply (also where OpenMP nests).
  int num_threads = 0;
};

struct GrabCutStats {
  int iterations = 0;          // iterations actually run
  std::int64_t last_flow = 0;  // max-flow value of the last graph
};

// What the stopping rule remembers of an image's previous iterations. Both
// backends keep one per image (the CPU in grabcut_cpu, the GPU as device flags).
struct IterationHistory {
  bool has_previous = false;           // a component assignment to compare with exists
  bool previous_mask_changed = false;  // the last iteration changed the mask
};

// The stopping rule, after an iteration that changed the mask (mask_changed) and the
// components (components_changed, read only with a previous assignment): whether
// the image stops here. The state after an iteration is (model, mask), and the cut
// depends on the model alone. A frozen model gives the same graph every time, so
// one iteration is the fixed point. Otherwise, components equal to the last
// iteration's, learnt on an equal mask, give the same model; with the mask
// unchanged too, every later iteration repeats this one. Both masks must be
// unchanged: this iteration learnt on the mask the last one produced. Records
// this iteration in `history` for the next call.
GRABCUT_HD bool stop_after_iteration(IterationHistory& history, bool freeze_model, bool mask_changed,
                                     bool components_changed) {
  const bool stop = freeze_model || (!mask_changed && !history.previous_mask_changed && history.has_previous &&
                                     !components_changed);
  history.has_previous = true;
  history.previous_mask_changed = mask_changed;
  return stop;
}

// Relabels one pixel from the cut: a probable label becomes kProbForeground on the
// source side (*source_side != 0) and kProbBackground on the sink side; hard labels
// never change (and source_side is then not read). Returns whether *label changed.
GRABCUT_HD bool relabel_from_cut(std::uint8_t* label, const std::uint8_t* source_side) {
  const std::uint8_t old_label = *label;
  if (!is_probable_label(old_label)) return false;
  const std::uint8_t new_label = *source_side != 0 ? kProbForeground : kProbBackground;
  if (new_label == old_label) return false;
  *label = new_label;
  return true;
}

// Throws std::invalid_argument naming the offending argument.
void validate_options(const GrabCutOptions& options);

// Segments one image in place. image: planar uint8, 3 x height x width. mask:
// height x width labels 0..3, updated in place. model: 2 * components rows of
// kParamsPerComponent doubles (background then foreground); read when
// !init_model, always overwritten with the final model (unchanged if frozen).
// Throws std::invalid_argument on bad arguments (a class without pixels when
// init_model, labels outside 0..3, a frozen model with a class that has no
// usable component; a model that is not frozen relearns such a class from the
// mask).
GrabCutStats grabcut_cpu(const std::uint8_t* image, int height, int width, std::uint8_t* mask, double* model,
                         const GrabCutOptions& options);

}  // namespace grabcut
