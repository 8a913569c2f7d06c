// The max-flow schedule the CUDA tests run by default: MaxflowSchedule's defaults,
// or what the environment asks for, so that one build tests every schedule:
//   GRABCUT_TEST_CAP=N         MaxflowSchedule::bfs_cap (0: relabels never capped)
//   GRABCUT_TEST_ROUNDS=N      MaxflowSchedule::local_rounds (N >= 1)
//   GRABCUT_TEST_GROW_CAP=0/1  MaxflowSchedule::grow_cap
//   GRABCUT_TEST_VISITS=N      MaxflowSchedule::push_visits (N >= 1)
//   GRABCUT_TEST_REGION=0/1    MaxflowSchedule::region
//   GRABCUT_TEST_CHECKERBOARD=0/1  MaxflowSchedule::checkerboard
//   GRABCUT_TEST_EXACT_START=0/1   MaxflowSchedule::exact_start
//   GRABCUT_TEST_REVERSE_WARM=0/1  MaxflowSchedule::reverse_warm
//   GRABCUT_TEST_BAND=N        MaxflowSchedule::band (N >= 0)
//   GRABCUT_TEST_RIM_LISTS=0/1 MaxflowSchedule::rim_lists
//   GRABCUT_TEST_RELAX_EVERY=N MaxflowSchedule::relax_every (N >= 0)
#pragma once

#include <cstdlib>

#include "cuda/maxflow.h"

namespace grabcut::testing {

// Sets `field` to the integer in environment variable `name` if it is set and >= least.
inline void int_from_environment(const char* name, int least, int& field) {
  const char* v = std::getenv(name);
  if (v != nullptr && std::atoi(v) >= least) field = std::atoi(v);
}

// Sets `field` from environment variable `name` (0: false, else true) if it is set.
inline void flag_from_environment(const char* name, bool& field) {
  const char* v = std::getenv(name);
  if (v != nullptr) field = std::atoi(v) != 0;
}

inline grabcut::cuda::MaxflowSchedule schedule_from_environment() {
  grabcut::cuda::MaxflowSchedule schedule;
  int_from_environment("GRABCUT_TEST_CAP", 0, schedule.bfs_cap);
  int_from_environment("GRABCUT_TEST_ROUNDS", 1, schedule.local_rounds);
  flag_from_environment("GRABCUT_TEST_GROW_CAP", schedule.grow_cap);
  int_from_environment("GRABCUT_TEST_VISITS", 1, schedule.push_visits);
  flag_from_environment("GRABCUT_TEST_REGION", schedule.region);
  flag_from_environment("GRABCUT_TEST_CHECKERBOARD", schedule.checkerboard);
  flag_from_environment("GRABCUT_TEST_EXACT_START", schedule.exact_start);
  flag_from_environment("GRABCUT_TEST_REVERSE_WARM", schedule.reverse_warm);
  int_from_environment("GRABCUT_TEST_BAND", 0, schedule.band);
  flag_from_environment("GRABCUT_TEST_RIM_LISTS", schedule.rim_lists);
  int_from_environment("GRABCUT_TEST_RELAX_EVERY", 0, schedule.relax_every);
  return schedule;
}

}  // namespace grabcut::testing
