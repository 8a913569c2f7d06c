// The max-flow schedules that the CUDA benchmarks time side by side (bench_grabcut_cuda
// list, bench_maxflow_cuda), by key, and the pick of them that GRABCUT_BENCH_SCHEDULES
// asks for.
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/maxflow.h"

namespace grabcut::bench {

struct NamedSchedule {
  const char* key;
  const char* name;
  grabcut::cuda::MaxflowSchedule schedule;
};

// Keys: "q0" for every schedule (its grid-wide sweeps; the work-queue modes q1 and q2
// of bench/RESULTS.md were removed from the solver after they measured slower); "cN",
// relabels capped at N sweeps; "rN", N push rounds a visit (else 24); "g", the cap
// doubled when too short (MaxflowSchedule::grow_cap); "R", region heights
// (MaxflowSchedule::region, 16 push sweeps between relabels unless "vN" says N); "C",
// the checkerboard; "E", exact starts reused (MaxflowSchedule::exact_start); "W", warm
// starts' reverse phase (MaxflowSchedule::reverse_warm); "BN", the band of visited labels
// (MaxflowSchedule::band = N); "L", the relabels' rim lists (MaxflowSchedule::rim_lists);
// "XN", exact heights again every N rounds of a visit (MaxflowSchedule::relax_every = N).
inline const std::vector<NamedSchedule>& all_schedules() {
  static const std::vector<NamedSchedule> all = {
      // MaxflowSchedule: push visits, local rounds, BFS cap, grow the cap[, region, checkerboard,
      // exact start, reverse warm, band, rim lists, relax every]
      {"q0", "relabels uncapped, v0.7", {8, 24, 0, false}},
      {"q0c8", "BFS cap 8", {8, 24, 8, false}},
      {"q0c12", "BFS cap 12", {8, 24, 12, false}},
      {"q0c16", "BFS cap 16", {8, 24, 16, false}},
      {"q0c24", "BFS cap 24", {8, 24, 24, false}},
      {"q0c12r12", "BFS cap 12, 12 rounds, v0.13", {8, 12, 12, false}},
      {"q0c12r8", "BFS cap 12, 8 rounds", {8, 8, 12, false}},
      {"q0c16r12", "BFS cap 16, 12 rounds", {8, 12, 16, false}},
      {"q0c12r12g", "BFS cap 12 growing, 12 rounds (default)", {8, 12, 12, true}},
      {"q0c16r12g", "BFS cap 16 growing, 12 rounds", {8, 12, 16, true}},
      {"q0c24r12g", "BFS cap 24 growing, 12 rounds", {8, 12, 24, true}},
      {"q0c12r32gR", "region heights, 32 rounds", {16, 32, 12, true, true, false}},
      {"q0c12r32gRC", "region heights, 32 rounds, checkerboard", {16, 32, 12, true, true, true}},
      {"q0c12r16gRC", "region heights, 16 rounds, checkerboard", {16, 16, 12, true, true, true}},
      {"q0c12r8gRC", "region heights, 8 rounds, checkerboard", {16, 8, 12, true, true, true}},
      {"q0c12r16gR", "region heights, 16 rounds", {16, 16, 12, true, true, false}},
      {"q0c12r16gRCv8", "region heights, 16 rounds, checkerboard, 8 push sweeps", {8, 16, 12, true, true, true}},
      {"q0c12r16gRCv32", "region heights, 16 rounds, checkerboard, 32 push sweeps", {32, 16, 12, true, true, true}},
      {"q0c12r16gRv8", "region heights, 16 rounds, 8 push sweeps", {8, 16, 12, true, true, false}},
      {"q0c12r16gRv32", "region heights, 16 rounds, 32 push sweeps", {32, 16, 12, true, true, false}},
      {"q0c6r16gR", "region heights, 16 rounds, BFS cap 6", {16, 16, 6, true, true, false}},
      {"q0c24r16gR", "region heights, 16 rounds, BFS cap 24", {16, 16, 24, true, true, false}},
      {"q0c12r16gRE", "region heights, 16 rounds, exact starts reused", {16, 16, 12, true, true, false, true}},
      {"q0c12r16gRv32E", "region heights, 16 rounds, 32 push sweeps, exact starts reused",
       {32, 16, 12, true, true, false, true}},
      {"q0c12r16gRCE", "region heights, 16 rounds, checkerboard, exact starts reused",
       {16, 16, 12, true, true, true, true}},
      {"q0c12r16gRW", "region heights, 16 rounds, reverse warm", {16, 16, 12, true, true, false, false, true}},
      {"q0c12r16gRCW", "region heights, 16 rounds, checkerboard, reverse warm",
       {16, 16, 12, true, true, true, false, true}},
      {"q0c12r16gRCWE", "region heights, 16 rounds, checkerboard, reverse warm, exact starts reused",
       {16, 16, 12, true, true, true, true, true}},
      {"q0c12r16gRB4", "region heights, 16 rounds, band 4", {16, 16, 12, true, true, false, false, false, 4}},
      {"q0c12r16gRCB4", "region heights, 16 rounds, checkerboard, band 4",
       {16, 16, 12, true, true, true, false, false, 4}},
      {"q0c12r16gRCWB2", "region heights, 16 rounds, checkerboard, reverse warm, band 2",
       {16, 16, 12, true, true, true, false, true, 2}},
      {"q0c12r16gRCWB4", "region heights, 16 rounds, checkerboard, reverse warm, band 4",
       {16, 16, 12, true, true, true, false, true, 4}},
      {"q0c12r24gRCW", "region heights, 24 rounds, checkerboard, reverse warm",
       {16, 24, 12, true, true, true, false, true}},
      {"q0c12r32gRCW", "region heights, 32 rounds, checkerboard, reverse warm",
       {16, 32, 12, true, true, true, false, true}},
      {"q0c12r24gRC", "region heights, 24 rounds, checkerboard", {16, 24, 12, true, true, true}},
      {"q0c12r16gRL", "region heights, 16 rounds, rim lists",
       {16, 16, 12, true, true, false, false, false, 0, true}},
      {"q0c12r24gRL", "region heights, 24 rounds, rim lists",
       {16, 24, 12, true, true, false, false, false, 0, true}},
      {"q0c12r16gRCL", "region heights, 16 rounds, checkerboard, rim lists",
       {16, 16, 12, true, true, true, false, false, 0, true}},
      {"q0c12r16gRCWL", "region heights, 16 rounds, checkerboard, reverse warm, rim lists",
       {16, 16, 12, true, true, true, false, true, 0, true}},
      {"q0c12r24gRCWL", "region heights, 24 rounds, checkerboard, reverse warm, rim lists",
       {16, 24, 12, true, true, true, false, true, 0, true}},
      {"q0c12r24gRCWLB4", "region heights, 24 rounds, checkerboard, reverse warm, rim lists, band 4",
       {16, 24, 12, true, true, true, false, true, 4, true}},
      {"q0c12r24gRCWLX16", "region heights, 24 rounds relaxed every 16, checkerboard, reverse warm, rim lists",
       {16, 24, 12, true, true, true, false, true, 0, true, 16}},
      {"q0c12r32gRCWLX16", "region heights, 32 rounds relaxed every 16, checkerboard, reverse warm, rim lists",
       {16, 32, 12, true, true, true, false, true, 0, true, 16}},
      {"q0c12r24gRCLX16", "region heights, 24 rounds relaxed every 16, checkerboard, rim lists",
       {16, 24, 12, true, true, true, false, false, 0, true, 16}},
      {"q0c12r24gRCLB4X16", "region heights, 24 rounds relaxed every 16, checkerboard, rim lists, band 4",
       {16, 24, 12, true, true, true, false, false, 4, true, 16}},
      {"q0c12r24gRLX16", "region heights, 24 rounds relaxed every 16, rim lists",
       {16, 24, 12, true, true, false, false, false, 0, true, 16}},
      {"q0c12r16gRCWB8", "region heights, 16 rounds, checkerboard, reverse warm, band 8",
       {16, 16, 12, true, true, true, false, true, 8}},
  };
  return all;
}

// The schedules GRABCUT_BENCH_SCHEDULES names (comma-separated keys; default
// q0,q0c12r12g: v0.7 and today's default), in the table's order, the first being the
// baseline. Throws std::invalid_argument if it names none.
inline std::vector<NamedSchedule> picked_schedules() {
  const char* pick = std::getenv("GRABCUT_BENCH_SCHEDULES");
  const std::string wanted = "," + std::string(pick != nullptr ? pick : "q0,q0c12r12g") + ",";
  std::vector<NamedSchedule> picked;
  std::string keys;
  for (const NamedSchedule& n : all_schedules()) {
    if (wanted.find("," + std::string(n.key) + ",") != std::string::npos) picked.push_back(n);
    keys += std::string(" ") + n.key;
  }
  if (picked.empty()) throw std::invalid_argument("GRABCUT_BENCH_SCHEDULES: none of" + keys);
  return picked;
}

}  // namespace grabcut::bench
