// A grid graph in a file, so that the torch-free models and benchmarks can solve graphs
// that Python built (bench/mincut_bench.py --dump writes them) or the model wrote
// (model_region_discharge list ... --dump DIR): the bytes "TGCG1\n",
// then height and width as little-endian int32, then the terminals (height x width
// int32, row-major; > 0 source, < 0 sink) and the four forward n-link planes of
// core/maxflow.h in the order kRight, kDownRight, kDown, kDownLeft (each height x width
// int32; links that leave the grid must be 0).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include "common/grid_graph.h"

namespace grabcut::testing {

inline HostGridGraph read_graph_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  char magic[6] = {};
  in.read(magic, sizeof magic);
  std::int32_t hw[2] = {};
  in.read(reinterpret_cast<char*>(hw), sizeof hw);
  if (!in || std::memcmp(magic, "TGCG1\n", sizeof magic) != 0) throw std::runtime_error(path + ": not a TGCG1 graph file");
  if (hw[0] <= 0 || hw[1] <= 0 || std::int64_t{hw[0]} * hw[1] > (std::int64_t{1} << 28)) {
    throw std::runtime_error(path + ": bad size");
  }
  HostGridGraph g(hw[0], hw[1]);
  const auto bytes = static_cast<std::streamsize>(g.size() * sizeof(std::int32_t));
  in.read(reinterpret_cast<char*>(g.terminal.data()), bytes);
  for (auto& plane : g.nlink) in.read(reinterpret_cast<char*>(plane.data()), bytes);
  if (!in) throw std::runtime_error(path + ": truncated");
  for (int y = 0; y < g.height; ++y) {
    for (int x = 0; x < g.width; ++x) {
      const std::size_t i = static_cast<std::size_t>(y) * static_cast<std::size_t>(g.width) + static_cast<std::size_t>(x);
      for (int d = 0; d < 4; ++d) {
        const std::int32_t c = g.nlink[d][i];
        if (c < 0 || (c != 0 && !g.has_neighbour(y, x, d))) throw std::runtime_error(path + ": bad n-link");
      }
    }
  }
  return g;
}

// Writes g in the format above (this host's int32 byte order, which read_graph_file
// assumes too: little-endian on every machine the project runs on).
inline void write_graph_file(const std::string& path, const HostGridGraph& g) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path);
  out.write("TGCG1\n", 6);
  const std::int32_t hw[2] = {g.height, g.width};
  out.write(reinterpret_cast<const char*>(hw), sizeof hw);
  const auto bytes = static_cast<std::streamsize>(g.size() * sizeof(std::int32_t));
  out.write(reinterpret_cast<const char*>(g.terminal.data()), bytes);
  for (const auto& plane : g.nlink) out.write(reinterpret_cast<const char*>(plane.data()), bytes);
  if (!out) throw std::runtime_error(path + ": write failed");
}

}  // namespace grabcut::testing
