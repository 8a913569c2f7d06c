// The max-flow schedule the CUDA tests run by default: MaxflowSchedule's defaults,
// or what the environment asks for, so that one build tests every schedule:
//   GRABCUT_TEST_CAP=N         MaxflowSchedule::bfs_cap (0: relabels never capped)
//   GRABCUT_TEST_ROUNDS=N      MaxflowSchedule::local_rounds (N >= 1)
//   GRABCUT_TEST_GROW_CAP=0/1  MaxflowSchedule::grow_cap
//   GRABCUT_TEST_VISITS=N      MaxflowSchedule::push_visits (N >= 1)
//   GRABCUT_TEST_REGION=0/1    MaxflowSchedule::region
//   GRABCUT_TEST_CHECKERBOARD=0/1  MaxflowSchedule::checkerboard
//   GRABCUT_TEST_EXACT_START=0/1   MaxflowSchedule::exact_start
//   GRABCUT_TEST_BIT_RELAX=0/1     MaxflowSchedule::bit_relax
//   GRABCUT_TEST_RELAX_EVERY=N     MaxflowSchedule::relax_every (N >= 0)
//   GRABCUT_TEST_BIT_BFS=0/1       MaxflowSchedule::bit_bfs
#pragma once

#include <cstdlib>

#include "cuda/maxflow.h"

namespace grabcut::testing {

inline grabcut::cuda::MaxflowSchedule schedule_from_environment() {
  grabcut::cuda::MaxflowSchedule schedule;
  const char* cap = std::getenv("GRABCUT_TEST_CAP");
  if (cap != nullptr && std::atoi(cap) >= 0) schedule.bfs_cap = std::atoi(cap);
  const char* rounds = std::getenv("GRABCUT_TEST_ROUNDS");
  if (rounds != nullptr && std::atoi(rounds) >= 1) schedule.local_rounds = std::atoi(rounds);
  const char* grow = std::getenv("GRABCUT_TEST_GROW_CAP");
  if (grow != nullptr) schedule.grow_cap = std::atoi(grow) != 0;
  const char* visits = std::getenv("GRABCUT_TEST_VISITS");
  if (visits != nullptr && std::atoi(visits) >= 1) schedule.push_visits = std::atoi(visits);
  const char* region = std::getenv("GRABCUT_TEST_REGION");
  if (region != nullptr) schedule.region = std::atoi(region) != 0;
  const char* checkerboard = std::getenv("GRABCUT_TEST_CHECKERBOARD");
  if (checkerboard != nullptr) schedule.checkerboard = std::atoi(checkerboard) != 0;
  const char* exact = std::getenv("GRABCUT_TEST_EXACT_START");
  if (exact != nullptr) schedule.exact_start = std::atoi(exact) != 0;
  const char* bits = std::getenv("GRABCUT_TEST_BIT_RELAX");
  if (bits != nullptr) schedule.bit_relax = std::atoi(bits) != 0;
  const char* every = std::getenv("GRABCUT_TEST_RELAX_EVERY");
  if (every != nullptr && std::atoi(every) >= 0) schedule.relax_every = std::atoi(every);
  const char* bfs = std::getenv("GRABCUT_TEST_BIT_BFS");
  if (bfs != nullptr) schedule.bit_bfs = std::atoi(bfs) != 0;
  return schedule;
}

}  // namespace grabcut::testing
