// The GrabCut stages on the GPU, one launcher per stage, each the batched twin of a
// CPU function of core/gmm.h, core/energy.h or core/driver.h with bit-identical
// results:
//
//   sum_squared_differences_cuda   sum_squared_differences_cpu   (energy.h)
//   nlinks_cuda                    beta_from_sum + nlinks_cpu    (energy.h)
//   kmeans_init_cuda               kmeans_init_cpu               (gmm.h)
//   assign_components_cuda         assign_components_cpu         (gmm.h)
//   learn_gmms_cuda                learn_gmms_cpu                (gmm.h)
//   tlinks_cuda                    tlinks_cpu                    (energy.h)
//   update_masks_cuda              relabel_from_cut              (iteration.h)
//   end_iteration_cuda             stop_after_iteration          (iteration.h)
//
// Every launcher runs one launch (or a fixed short sequence of launches) over all
// images of the batch (cuda/batch.h) on the given stream and never synchronises
// with the host; their scratch memory is cuda/scratch.h's. Images whose `active`
// flag is 0 are skipped by the stages that change state (kmeans, assign, learn,
// tlinks, mask update): their outputs are left untouched.
//
// This header only gathers the stage headers, for the driver's tests and
// benchmarks; each is implemented by the .cu of its name.
#pragma once

#include "cuda/batch.h"
#include "cuda/energy.h"
#include "cuda/gmm.h"
#include "cuda/iteration.h"
#include "cuda/scratch.h"
