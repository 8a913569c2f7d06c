// Timing of the GPU max-flow (csrc/cuda/maxflow.cu) on GrabCut-like graphs:
// one 1024x1024 graph cold and warm, a batch of 50 graphs of 500x400, a batch of
// 512 crop-sized graphs (sides 60..450, as the dataset job's crops), one 4096x4096
// graph, and the workspace bytes per pixel. cudaEvent timing, warm-up,
// median of >= 10 runs. Each result is also checked: the returned cut must be the
// CPU solver's (core/maxflow.cpp) pixel for pixel and its capacity the returned flow.
//   bench_maxflow_cuda            the standard table for two schedules side by side:
//                                 v0.7's (relabels to the end, 24 push rounds a
//                                 visit) and the default (relabels capped at 12
//                                 sweeps, MaxflowSchedule::bfs_cap, 12 rounds)
//   bench_maxflow_cuda quick      the same without 4096x4096, medians of 5
//   (GRABCUT_BENCH_SCHEDULES=q0,q0c12,... picks variants: see bench_schedules.h)
//   bench_maxflow_cuda tune [CAP]  instead, several (push visits, local rounds) with
//                                 MaxflowSchedule::bfs_cap CAP (default 0), medians of 3
//   bench_maxflow_cuda graphs FILE...  instead, each graph file (tests/common/graph_file.h;
//                                 bench/mincut_bench.py --dump, bench/cpu_bench.py --dump)
//                                 solved cold under each picked schedule: median of 10
//                                 ms, its sweeps and relabels (the grid-wide barriers),
//                                 checked as above; with several files, the median, p90
//                                 and most of both over the files
//   bench_maxflow_cuda batch N FILE...  instead, the files cycled to N graphs as one batch,
//                                 solved cold under each picked schedule: median of 10 ms,
//                                 graphs a second, barriers, checked as above
//   bench_maxflow_cuda sequence N DIR  instead, GrabCut's five solves of each graph in DIR
//                                 (model_region_discharge list ... --dump DIR: DIR/NAME.tgcg
//                                 cold, DIR/iK/NAME.tgcg the terminals of iteration K),
//                                 cycled to N graphs as one batch: each iteration's solve
//                                 (cold, then warm) timed from the state the ones before it
//                                 leave, median of 5, with its counts (and the profiling
//                                 build's phases); the last one checked as above
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench_schedules.h"
#include "common/grabcut_graph.h"
#include "common/graph_file.h"
#include "common/grid_graph.h"
#include "common/percentile.h"
#include "core/maxflow.h"
#include "cuda/check.h"
#include "cuda/maxflow.h"
#include "cuda/maxflow_stats.h"

namespace {

using grabcut::cuda::GridDesc;

using HostGraph = grabcut::testing::HostGridGraph;

// The GrabCut-like graphs of tests/common/grabcut_graph.h, computed in float.
HostGraph grabcut_graph(int h, int w, unsigned seed) {
  return grabcut::testing::grabcut_graph(h, w, seed, {grabcut::testing::GrabCutScene::kSmoothScoreFloat});
}

// The terminals of the next GrabCut iteration: the old ones plus noise.
std::vector<std::int32_t> perturbed(const std::vector<std::int32_t>& t, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> gauss(0.0f, 1500.0f);
  std::vector<std::int32_t> out(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    out[i] = t[i] == -115200 ? t[i]
                             : static_cast<std::int32_t>(std::clamp(std::lround(t[i] + gauss(rng)), -115200L, 115200L));
  }
  return out;
}

struct DeviceMem {
  void* ptr = nullptr;
  explicit DeviceMem(std::size_t bytes) {
    if (bytes > 0) GRABCUT_CUDA_CHECK(cudaMalloc(&ptr, bytes));
  }
  ~DeviceMem() {
    if (ptr != nullptr) cudaFree(ptr);
  }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
};

class Batch {
 public:
  explicit Batch(const std::vector<HostGraph>& graphs) : graphs_(graphs) {
    std::int64_t off = 0;
    for (const auto& g : graphs) {
      GridDesc d;
      d.offset = off;
      d.height = g.height;
      d.width = g.width;
      desc_.push_back(d);
      off += static_cast<std::int64_t>(g.terminal.size());
    }
    n_ = static_cast<std::size_t>(off);
    terminal_ = std::make_unique<DeviceMem>(4 * n_);
    for (auto& l : nlink_) l = std::make_unique<DeviceMem>(4 * n_);
    cut_ = std::make_unique<DeviceMem>(n_);
    flows_ = std::make_unique<DeviceMem>(8 * graphs.size());
    ws_bytes_ = grabcut::cuda::maxflow_workspace_bytes(desc_);
    ws_ = std::make_unique<DeviceMem>(ws_bytes_);
    for (std::size_t b = 0; b < graphs.size(); ++b) {
      const auto at = static_cast<std::size_t>(desc_[b].offset) * 4;
      const std::size_t bytes = graphs[b].terminal.size() * 4;
      GRABCUT_CUDA_CHECK(cudaMemcpy(static_cast<char*>(terminal_->ptr) + at, graphs[b].terminal.data(), bytes,
                                    cudaMemcpyHostToDevice));
      for (int d = 0; d < 4; ++d) {
        GRABCUT_CUDA_CHECK(cudaMemcpy(static_cast<char*>(nlink_[d]->ptr) + at, graphs[b].nlink[d].data(), bytes,
                                      cudaMemcpyHostToDevice));
      }
    }
  }
  void set_terminals(std::size_t b, const std::vector<std::int32_t>& t) {
    GRABCUT_CUDA_CHECK(cudaMemcpy(static_cast<char*>(terminal_->ptr) + static_cast<std::size_t>(desc_[b].offset) * 4,
                                  t.data(), t.size() * 4, cudaMemcpyHostToDevice));
    if (graphs_[b].terminal != t) reference_.clear();
    graphs_[b].terminal = t;
  }
  grabcut::cuda::MaxflowSchedule schedule;  // what solve() passes

  void solve(bool warm, cudaStream_t s) {
    grabcut::cuda::BatchedGridGraph g;
    g.desc = desc_;
    g.total_pixels = static_cast<std::int64_t>(n_);
    g.terminal = static_cast<const std::int32_t*>(terminal_->ptr);
    for (int d = 0; d < 4; ++d) g.nlink[d] = static_cast<const std::int32_t*>(nlink_[d]->ptr);
    grabcut::cuda::maxflow_cuda(g, static_cast<std::uint8_t*>(cut_->ptr), static_cast<std::int64_t*>(flows_->ptr),
                                ws_->ptr, ws_bytes_, warm, s, schedule);
  }
  // Every graph's cut must be the CPU solver's, and its capacity the flow. The CPU's
  // cuts are computed once per set of terminals (set_terminals forgets them).
  bool verify() {
    std::vector<std::uint8_t> cut(n_);
    std::vector<std::int64_t> flows(graphs_.size());
    GRABCUT_CUDA_CHECK(cudaMemcpy(cut.data(), cut_->ptr, n_, cudaMemcpyDeviceToHost));
    GRABCUT_CUDA_CHECK(cudaMemcpy(flows.data(), flows_->ptr, 8 * flows.size(), cudaMemcpyDeviceToHost));
    if (reference_.empty()) {
      reference_.resize(n_);
      grabcut::GridMaxflowSolver cpu;
      for (std::size_t b = 0; b < graphs_.size(); ++b) {
        cpu.solve(graphs_[b].view(), reference_.data() + desc_[b].offset);
      }
    }
    for (std::size_t b = 0; b < graphs_.size(); ++b) {
      const std::uint8_t* got = cut.data() + desc_[b].offset;
      const std::uint8_t* want = reference_.data() + desc_[b].offset;
      if (!std::equal(want, want + graphs_[b].terminal.size(), got)) {
        std::printf("  graph %zu: the cut differs from the CPU solver's\n", b);
        return false;
      }
      if (grabcut::cut_capacity(graphs_[b].view(), got) != flows[b]) return false;
    }
    return true;
  }
  std::size_t workspace_bytes() const { return ws_bytes_; }
  std::size_t pixels() const { return n_; }
  grabcut::cuda::detail::MaxflowStats stats() const { return grabcut::cuda::detail::maxflow_read_stats(ws_->ptr, nullptr); }

 private:
  std::vector<HostGraph> graphs_;
  std::vector<GridDesc> desc_;
  std::size_t n_ = 0;
  std::unique_ptr<DeviceMem> terminal_;
  std::array<std::unique_ptr<DeviceMem>, 4> nlink_;
  std::unique_ptr<DeviceMem> cut_;
  std::unique_ptr<DeviceMem> flows_;
  std::size_t ws_bytes_ = 0;
  std::unique_ptr<DeviceMem> ws_;
  std::vector<std::uint8_t> reference_;  // the CPU's cuts, empty until verify needs them
};

// Median over `runs` of the time of `timed`, each preceded by the untimed `setup`.
float median_ms(int runs, const std::function<void()>& setup, const std::function<void()>& timed) {
  cudaEvent_t a;
  cudaEvent_t b;
  GRABCUT_CUDA_CHECK(cudaEventCreate(&a));
  GRABCUT_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int i = 0; i < runs + 2; ++i) {  // two warm-ups
    setup();
    GRABCUT_CUDA_CHECK(cudaDeviceSynchronize());
    GRABCUT_CUDA_CHECK(cudaEventRecord(a, nullptr));
    timed();
    GRABCUT_CUDA_CHECK(cudaEventRecord(b, nullptr));
    GRABCUT_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    GRABCUT_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    if (i >= 2) t.push_back(ms);
  }
  GRABCUT_CUDA_CHECK(cudaEventDestroy(a));
  GRABCUT_CUDA_CHECK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The profiling build's split of the push visits in sparse sweeps (fewer tiles than
// blocks: each visit's latency is the sweep's), in us a visit at the SM's peak clock.
void print_sparse_visits(const char* what, const grabcut::cuda::detail::MaxflowStats& s) {
  if (s.sparse_visits == 0) return;
  int khz = 0;
  GRABCUT_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  const double n = static_cast<double>(s.sparse_visits);
  const auto us = [&](unsigned long long cycles) { return static_cast<double>(cycles) / (n * khz * 1e-3); };
  std::printf("  %-22s sparse push visits %llu, us a visit at %.2f GHz: load %.2f  first relax %.2f (%.1f steps)"
              "  rounds %.2f (%.1f)  write-back %.2f; %.1f%% started from exact heights\n",
              what, s.sparse_visits, khz * 1e-6, us(s.sparse_load_cycles), us(s.sparse_relax_cycles),
              static_cast<double>(s.sparse_relax_steps) / n, us(s.sparse_rounds_cycles),
              static_cast<double>(s.sparse_rounds) / n, us(s.sparse_write_cycles),
              100.0 * static_cast<double>(s.sparse_exact_starts) / n);
}

// Sums the sparse visits' profile of b into a (to report a set of graphs).
void add_sparse_visits(grabcut::cuda::detail::MaxflowStats& a, const grabcut::cuda::detail::MaxflowStats& b) {
  a.sparse_visits += b.sparse_visits;
  a.sparse_load_cycles += b.sparse_load_cycles;
  a.sparse_relax_cycles += b.sparse_relax_cycles;
  a.sparse_rounds_cycles += b.sparse_rounds_cycles;
  a.sparse_write_cycles += b.sparse_write_cycles;
  a.sparse_rounds += b.sparse_rounds;
  a.sparse_relax_steps += b.sparse_relax_steps;
  a.sparse_exact_starts += b.sparse_exact_starts;
}

void print_stats(const char* what, const grabcut::cuda::detail::MaxflowStats& s) {
  std::printf("  %-22s relabels %llu (%llu capped)  bfs sweeps %llu  push sweeps %llu  bfs tiles %llu  push tiles %llu"
              "  blocks %llu\n",
              what, s.global_relabels, s.capped_relabels, s.bfs_sweeps, s.push_sweeps, s.bfs_tiles, s.push_tiles,
              s.grid_blocks);
  // The phase profile (a GRABCUT_MAXFLOW_PHASE_CLOCK build: bench_maxflow_cuda_phases).
  if (s.bfs_ns + s.check_ns + s.push_ns > 0) {
    const double blocks = static_cast<double>(s.grid_blocks);
    std::printf("  %-22s phases: bfs %.3f ms (blocks busy %.0f%%)  check %.3f ms  push %.3f ms (busy %.0f%%)\n", "",
                s.bfs_ns * 1e-6, 100.0 * s.bfs_busy_ns / (blocks * s.bfs_ns + 1), s.check_ns * 1e-6, s.push_ns * 1e-6,
                100.0 * s.push_busy_ns / (blocks * s.push_ns + 1));
    std::printf("  %-22s push visits %llu with work, %llu capped at the round limit, %.1f rounds per visit\n", "",
                s.push_visits_run, s.push_visits_capped,
                static_cast<double>(s.push_rounds) / static_cast<double>(s.push_visits_run + 1));
  }
  print_sparse_visits(what, s);
}

// The sweep trace of a profiling build: each kind's sweeps and grid time, bucketed by the
// tiles worked in a sweep against the grid's blocks B (a sweep of fewer than B tiles waits
// for its slowest visit; one of many more keeps every block busy).
void print_sweep_profile(const char* what, const std::vector<grabcut::cuda::detail::SweepRecord>& sweeps,
                         unsigned long long blocks) {
  using grabcut::cuda::detail::SweepKind;
  if (sweeps.empty() || blocks == 0) return;
  constexpr int kBuckets = 6;
  const char* names[kBuckets] = {"0", "<=B/8", "<=B/2", "<=B", "<=4B", ">4B"};
  const auto bucket = [&](unsigned int tiles) {
    if (tiles == 0) return 0;
    if (tiles * 8ULL <= blocks) return 1;
    if (tiles * 2ULL <= blocks) return 2;
    if (tiles <= blocks) return 3;
    return tiles <= 4 * blocks ? 4 : 5;
  };
  std::printf("  %-22s sweeps by tiles worked, B = %llu blocks: count / ms\n", what, blocks);
  const std::pair<SweepKind, const char*> kinds[] = {
      {SweepKind::kBfs, "bfs"}, {SweepKind::kCheck, "check"}, {SweepKind::kPush, "push"}};
  for (const auto& [kind, label] : kinds) {
    int count[kBuckets] = {};
    double ms[kBuckets] = {};
    for (const auto& r : sweeps) {
      if (r.kind != kind) continue;
      const int b = bucket(r.tiles);
      ++count[b];
      ms[b] += static_cast<double>(r.ns) * 1e-6;
    }
    std::printf("  %-22s %-5s", "", label);
    for (int b = 0; b < kBuckets; ++b) std::printf("  %s %d / %.3f", names[b], count[b], ms[b]);
    std::printf("\n");
  }
}

// GRABCUT_BENCH_TRACE=1 with the profiling build: the last solve's sweeps in order, one
// token each (b: BFS, c: check, p: push; then the tiles worked and the us it took), a
// relabel's cycle a line, to see how a solve's phases end (its sparse tails).
void print_sweep_trace(const char* what, const std::vector<grabcut::cuda::detail::SweepRecord>& sweeps) {
  using grabcut::cuda::detail::SweepKind;
  const char* on = std::getenv("GRABCUT_BENCH_TRACE");
  if (on == nullptr || std::strcmp(on, "1") != 0 || sweeps.empty()) return;
  std::printf("  %-22s sweep trace (kind tiles/us):", what);
  SweepKind last = SweepKind::kNone;
  for (const auto& r : sweeps) {
    if (r.kind == SweepKind::kBfs && last != SweepKind::kBfs) std::printf("\n   ");
    const char k = r.kind == SweepKind::kBfs ? 'b' : (r.kind == SweepKind::kCheck ? 'c' : 'p');
    std::printf(" %c%u/%.0f", k, r.tiles, static_cast<double>(r.ns) * 1e-3);
    last = r.kind;
  }
  std::printf("\n");
}

// The counters of the last solve and, in the profiling build, its sweep profile.
void print_last_solve(const char* what, const grabcut::cuda::detail::MaxflowStats& s) {
  print_stats(what, s);
  print_sweep_profile(what, grabcut::cuda::detail::maxflow_read_sweeps(nullptr), s.grid_blocks);
}

struct Results {
  float cold1024 = 0, warm1024 = 0, batch50 = 0, crops = 0, big = 0;
  bool ok = true;
};

Results run_all(Batch& one, const std::vector<std::int32_t>& t0, const std::vector<std::int32_t>& t1, Batch& fifty,
                Batch& crops, Batch* big, int runs, const grabcut::cuda::MaxflowSchedule& schedule) {
  Results r;
  for (Batch* b : {&one, &fifty, &crops, big}) {
    if (b != nullptr) b->schedule = schedule;
  }
  one.set_terminals(0, t0);
  r.cold1024 = median_ms(runs, [] {}, [&] { one.solve(false, nullptr); });
  r.ok = r.ok && one.verify();
  std::printf("  1024x1024 cold: %.3f ms\n", r.cold1024);
  print_last_solve("1024x1024 cold", one.stats());
  r.warm1024 = median_ms(
      runs,
      [&] {
        one.set_terminals(0, t0);
        one.solve(false, nullptr);
        one.set_terminals(0, t1);
      },
      [&] { one.solve(true, nullptr); });
  r.ok = r.ok && one.verify();
  std::printf("  1024x1024 warm: %.3f ms\n", r.warm1024);
  print_last_solve("1024x1024 warm", one.stats());
  r.batch50 = median_ms(runs, [] {}, [&] { fifty.solve(false, nullptr); });
  r.ok = r.ok && fifty.verify();
  std::printf("  50 x 500x400 cold: %.3f ms\n", r.batch50);
  print_last_solve("50 x 500x400 cold", fifty.stats());
  r.crops = median_ms(runs, [] {}, [&] { crops.solve(false, nullptr); });
  r.ok = r.ok && crops.verify();
  std::printf("  512 crops cold: %.3f ms\n", r.crops);
  print_last_solve("512 crops cold", crops.stats());
  if (big != nullptr) {
    r.big = median_ms(runs, [] {}, [&] { big->solve(false, nullptr); });
    r.ok = r.ok && big->verify();
    std::printf("  4096x4096 cold: %.3f ms\n", r.big);
    print_last_solve("4096x4096 cold", big->stats());
  }
  return r;
}

// The schedules GRABCUT_BENCH_SCHEDULES picks, or none (after saying why) if it names none.
std::vector<grabcut::bench::NamedSchedule> schedules_or_report() {
  try {
    return grabcut::bench::picked_schedules();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return {};
  }
}

// A solve's grid-wide barriers: its BFS and push sweeps and a check after each relabel.
unsigned long long grid_barriers(const grabcut::cuda::detail::MaxflowStats& st) {
  return st.bfs_sweeps + st.push_sweeps + st.global_relabels;
}

// `graphs` mode: every file's graph cold under each picked schedule, side by side.
int run_graph_files(int argc, char** argv) {
  const std::vector<grabcut::bench::NamedSchedule> variants = schedules_or_report();
  if (variants.empty()) return 2;
  std::printf("%-18s", "graph (cold, ms)");
  for (const auto& v : variants) std::printf(" | %-12s %5s %5s", v.key, "swp", "rel");
  std::printf("\n");
  bool ok = true;
  std::vector<std::vector<double>> times(variants.size()), barriers(variants.size());
  std::vector<grabcut::cuda::detail::MaxflowStats> stats(variants.size()), all_stats(variants.size());
  std::vector<std::vector<grabcut::cuda::detail::SweepRecord>> sweeps(variants.size()), all_sweeps(variants.size());
  for (int i = 2; i < argc; ++i) {
    Batch batch({grabcut::testing::read_graph_file(argv[i])});
    const std::string path = argv[i];
    std::printf("%-18s", path.substr(path.find_last_of('/') + 1).c_str());
    for (std::size_t v = 0; v < variants.size(); ++v) {
      batch.schedule = variants[v].schedule;
      const float ms = median_ms(10, [] {}, [&] { batch.solve(false, nullptr); });
      const auto st = batch.stats();
      const bool good = batch.verify();
      ok = ok && good;
      const unsigned long long swp = grid_barriers(st);
      std::printf(" | %9.3f%-3s %5llu %5llu", ms, good ? "" : " !!", swp, st.global_relabels);
      times[v].push_back(ms);
      barriers[v].push_back(static_cast<double>(swp));
      stats[v] = st;
      add_sparse_visits(all_stats[v], st);
      sweeps[v] = grabcut::cuda::detail::maxflow_read_sweeps(nullptr);
      all_sweeps[v].insert(all_sweeps[v].end(), sweeps[v].begin(), sweeps[v].end());
    }
    std::printf("\n");
    // The profiling build: each schedule's counts and phases.
    for (std::size_t v = 0; v < variants.size(); ++v) {
      if (stats[v].bfs_ns + stats[v].push_ns == 0) continue;
      print_stats(variants[v].key, stats[v]);
      print_sweep_profile(variants[v].key, sweeps[v], stats[v].grid_blocks);
      print_sweep_trace(variants[v].key, sweeps[v]);
    }
  }
  if (argc > 3) {
    std::printf("over %d graphs (median / p90 / most):\n", argc - 2);
    for (std::size_t v = 0; v < variants.size(); ++v) {
      using grabcut::testing::percentile;
      std::printf("  %-14s ms %8.3f %8.3f %8.3f   swp %6.0f %6.0f %6.0f\n", variants[v].key, percentile(times[v], 0.5),
                  percentile(times[v], 0.9), percentile(times[v], 1.0), percentile(barriers[v], 0.5),
                  percentile(barriers[v], 0.9), percentile(barriers[v], 1.0));
    }
    // The profiling build: every graph's last solve's sweeps together.
    for (std::size_t v = 0; v < variants.size(); ++v) {
      const std::string what = std::string("all: ") + variants[v].key;
      print_sweep_profile(what.c_str(), all_sweeps[v], stats[v].grid_blocks);
      print_sparse_visits(what.c_str(), all_stats[v]);
    }
  }
  std::printf("swp: BFS and push sweeps plus one check a relabel (the grid-wide barriers); rel: relabels\n");
  std::printf("cuts == CPU solver's, capacity == flow: %s\n", ok ? "yes" : "NO (BUG)");
  return ok ? 0 : 1;
}

// `files` repeated in turn to `count` graphs (a batch of N from a few files).
std::vector<HostGraph> cycled(const std::vector<HostGraph>& files, int count) {
  std::vector<HostGraph> graphs;
  for (int i = 0; i < count; ++i) graphs.push_back(files[static_cast<std::size_t>(i) % files.size()]);
  return graphs;
}

// bench_maxflow_cuda batch N FILE...: the graph files cycled to N graphs, solved cold as
// one batch under each picked schedule (issue 36's batches of small graphs: a throughput
// figure, graphs a second), checked as above; the profiling build adds each schedule's
// counts, phases and sweep profile.
int run_batch_files(int argc, char** argv) {
  const int count = argc > 3 ? std::atoi(argv[2]) : 0;
  if (count < 1) {
    std::fprintf(stderr, "usage: bench_maxflow_cuda batch N FILE...\n");
    return 2;
  }
  const std::vector<grabcut::bench::NamedSchedule> variants = schedules_or_report();
  if (variants.empty()) return 2;
  std::vector<HostGraph> files;
  for (int i = 3; i < argc; ++i) files.push_back(grabcut::testing::read_graph_file(argv[i]));
  Batch batch(cycled(files, count));
  files.clear();
  std::printf("a batch of %d graphs from %d files, %zu pixels, cold\n", count, argc - 3, batch.pixels());
  bool ok = true;
  for (const auto& v : variants) {
    batch.schedule = v.schedule;
    const float ms = median_ms(10, [] {}, [&] { batch.solve(false, nullptr); });
    const auto st = batch.stats();
    const bool good = batch.verify();
    ok = ok && good;
    std::printf("  %-14s %9.3f ms%s  %8.0f graphs/s  barriers %llu  relabels %llu\n", v.key, ms, good ? "" : " !!",
                count / (ms * 1e-3), grid_barriers(st), st.global_relabels);
    print_last_solve(v.key, st);
  }
  std::printf("cuts == CPU solver's, capacity == flow: %s\n", ok ? "yes" : "NO (BUG)");
  return ok ? 0 : 1;
}

// bench_maxflow_cuda sequence N DIR (see the top of the file): where a batch's warm
// solves go, iteration by iteration, under each picked schedule.
int run_sequence(int argc, char** argv) {
  const int count = argc > 3 ? std::atoi(argv[2]) : 0;
  if (count < 1) {
    std::fprintf(stderr, "usage: bench_maxflow_cuda sequence N DIR\n");
    return 2;
  }
  const std::vector<grabcut::bench::NamedSchedule> variants = schedules_or_report();
  if (variants.empty()) return 2;
  namespace fs = std::filesystem;
  const fs::path dir = argv[3];
  std::vector<fs::path> cold;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".tgcg") cold.push_back(e.path());
  }
  std::sort(cold.begin(), cold.end());
  if (cold.empty()) throw std::runtime_error(dir.string() + ": no graph files");
  constexpr int kIterations = 5;
  // terminals[k][f]: file f's terminals in iteration k (the last one present where an
  // image stopped early: its later solves change nothing).
  std::vector<HostGraph> files;
  std::vector<std::vector<std::vector<std::int32_t>>> terminals(kIterations);
  for (const fs::path& f : cold) {
    files.push_back(grabcut::testing::read_graph_file(f.string()));
    terminals[0].push_back(files.back().terminal);
    for (int k = 1; k < kIterations; ++k) {
      const fs::path later = dir / ("i" + std::to_string(k)) / f.filename();
      terminals[static_cast<std::size_t>(k)].push_back(
          fs::exists(later) ? grabcut::testing::read_graph_file(later.string()).terminal
                            : terminals[static_cast<std::size_t>(k - 1)].back());
    }
  }
  Batch batch(cycled(files, count));
  const auto set_iteration = [&](int k) {
    for (int i = 0; i < count; ++i) {
      batch.set_terminals(static_cast<std::size_t>(i),
                          terminals[static_cast<std::size_t>(k)][static_cast<std::size_t>(i) % files.size()]);
    }
  };
  std::printf("a batch of %d graphs from %zu images, %zu pixels, GrabCut's %d solves\n", count, files.size(),
              batch.pixels(), kIterations);
  bool ok = true;
  for (const auto& v : variants) {
    batch.schedule = v.schedule;
    float total = 0;
    for (int k = 0; k < kIterations; ++k) {
      const float ms = median_ms(
          5,
          [&] {
            for (int j = 0; j < k; ++j) {
              set_iteration(j);
              batch.solve(j > 0, nullptr);
            }
            set_iteration(k);
          },
          [&] { batch.solve(k > 0, nullptr); });
      total += ms;
      const auto st = batch.stats();
      std::printf("  %-14s iteration %d (%s) %9.3f ms  barriers %llu  relabels %llu\n", v.key, k, k > 0 ? "warm" : "cold",
                  ms, grid_barriers(st), st.global_relabels);
      print_stats(v.key, st);
    }
    const bool good = batch.verify();
    ok = ok && good;
    std::printf("  %-14s all five %9.3f ms%s\n", v.key, total, good ? "" : " !! (the last cut differs)");
  }
  std::printf("cuts == CPU solver's, capacity == flow: %s\n", ok ? "yes" : "NO (BUG)");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  // Line by line: a run stopped by a time limit still shows what it measured.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const bool tune = argc > 1 && std::strcmp(argv[1], "tune") == 0;
  const bool quick = argc > 1 && std::strcmp(argv[1], "quick") == 0;
  const int tune_cap = tune && argc > 2 ? std::max(0, std::atoi(argv[2])) : 0;
  cudaDeviceProp prop{};
  GRABCUT_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);
  if (argc > 1 && std::strcmp(argv[1], "graphs") == 0) return run_graph_files(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "batch") == 0) return run_batch_files(argc, argv);
  if (argc > 1 && std::strcmp(argv[1], "sequence") == 0) {
    try {
      return run_sequence(argc, argv);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
  }

  std::vector<HostGraph> g1{grabcut_graph(1024, 1024, 1)};
  const std::vector<std::int32_t> t0 = g1[0].terminal;
  const std::vector<std::int32_t> t1 = perturbed(t0, 2);
  Batch one(g1);
  std::vector<HostGraph> g50;
  for (int i = 0; i < 50; ++i) g50.push_back(grabcut_graph(500, 400, 100U + static_cast<unsigned>(i)));
  Batch fifty(g50);
  g50.clear();
  std::vector<HostGraph> gcrops;
  std::mt19937 size_rng(5);
  std::uniform_int_distribution<int> side(60, 450);
  for (int i = 0; i < 512; ++i) {
    const int h = side(size_rng);
    gcrops.push_back(grabcut_graph(h, side(size_rng), 1000U + static_cast<unsigned>(i)));
  }
  Batch crops(gcrops);
  gcrops.clear();
  std::vector<HostGraph> g4k{grabcut_graph(quick ? 64 : 4096, quick ? 64 : 4096, 7)};
  Batch big(g4k);
  g4k.clear();

  {
    std::vector<std::uint8_t> cut(one.pixels());
    grabcut::GridMaxflowSolver cpu;
    const auto c0 = std::chrono::steady_clock::now();
    cpu.solve(g1[0].view(), cut.data());
    const auto c1 = std::chrono::steady_clock::now();
    std::printf("CPU solver (core/maxflow.cpp), 1024x1024 cold, one run: %.3f ms\n",
                std::chrono::duration<double, std::milli>(c1 - c0).count());
  }

  if (tune) {
    float best = 1e30f;
    int best_k = 8;
    int best_r = 24;
    bool all_ok = true;
    const int configs[][2] = {{8, 24}, {8, 12}, {8, 8}, {12, 12}, {16, 12}, {16, 8}, {12, 16}, {6, 12}, {16, 24},
                              {32, 24}, {4, 48}, {8, 6}, {8, 4}, {16, 4}, {12, 6}};
    for (const auto& kr : configs) {
      {
        const int k = kr[0];
        const int rr = kr[1];
        grabcut::cuda::MaxflowSchedule schedule;
        schedule.bfs_cap = tune_cap;
        schedule.push_visits = k;
        schedule.local_rounds = rr;
        const Results r = run_all(one, t0, t1, fifty, crops, nullptr, 3, schedule);
        std::printf("tune K=%2d R=%2d: 1024 cold %8.3f ms  warm %8.3f ms  batch50 %8.3f ms  crops %8.3f ms %s\n", k,
                    rr, r.cold1024, r.warm1024, r.batch50, r.crops, r.ok ? "" : "CHECK FAILED");
        const float score = r.cold1024 + r.warm1024 + r.batch50 + r.crops;
        all_ok = all_ok && r.ok;
        if (r.ok && score < best) {
          best = score;
          best_k = k;
          best_r = rr;
        }
      }
    }
    std::printf("best: K=%d R=%d\n", best_k, best_r);
    return all_ok ? 0 : 1;
  }

  // The variants in the same run, each one's table after its statistics; the first is
  // the baseline (see bench_schedules.h).
  using Variant = grabcut::bench::NamedSchedule;
  const std::vector<Variant> variants = schedules_or_report();
  if (variants.empty()) return 2;
  const int num_variants = static_cast<int>(variants.size());
  std::vector<Results> by_variant(variants.size());
  bool ok = true;
  for (int v = 0; v < num_variants; ++v) {
    std::printf("\nvariant: %s\n", variants[v].name);
    by_variant[v] = run_all(one, t0, t1, fifty, crops, quick ? nullptr : &big, quick ? 5 : 10, variants[v].schedule);
    ok = ok && by_variant[v].ok;
  }
  std::printf("\nGPU max-flow, ms (medians, GrabCut-like graphs; speed-up over the first)\n  %-22s", "");
  for (const Variant& v : variants) std::printf(" | %24s", v.name);
  std::printf("\n");
  const auto row = [&](const char* what, float Results::*field) {
    const float base = by_variant[0].*field;
    std::printf("  %-22s", what);
    for (int v = 0; v < num_variants; ++v) {
      std::printf(" | %15.3f (%5.2fx)", by_variant[v].*field, base / by_variant[v].*field);
    }
    std::printf("\n");
  };
  row("1024x1024 cold", &Results::cold1024);
  row("1024x1024 warm", &Results::warm1024);
  row("50 x 500x400 (batch)", &Results::batch50);
  row("512 crops (batch)", &Results::crops);
  if (!quick) row("4096x4096 cold", &Results::big);
  std::printf("  workspace             %9.3f bytes/pixel (1024x1024), %.3f (4096x4096)\n",
              static_cast<double>(one.workspace_bytes()) / static_cast<double>(one.pixels()),
              static_cast<double>(big.workspace_bytes()) / static_cast<double>(big.pixels()));
  std::printf("  cuts == CPU solver's, capacity == flow: %s\n", ok ? "yes" : "NO (BUG)");
  return ok ? 0 : 1;
}
