// Row geometry (see row_geometry.h).
#include "plan/families/row_geometry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace agentcompile::plan {

std::vector<RowGeometryChoice> row_geometries(int64_t cols, int64_t typical_rows, const std::vector<int>& vecs,
                                              int max_elems, const DeviceProfile& device) {
  std::vector<RowGeometryChoice> out;
  const int max_threads = std::min(1024, device.max_threads_per_block);
  for (int vec : vecs) {
    if (vec < 1 || cols % vec != 0) continue;
    for (int tpr = 1; tpr <= max_threads; tpr *= 2) {
      if (static_cast<int64_t>(tpr) * vec > cols) break;  // a thread without a vector to move
      const int64_t step = static_cast<int64_t>(tpr) * vec;
      const int chunks = static_cast<int>((cols + step - 1) / step);
      if (chunks * vec > max_elems) continue;
      for (int rows = 1; rows <= 32; rows *= 2) {
        const int threads = tpr * rows;
        if (threads % 32 != 0) continue;
        if (threads > max_threads) break;
        if (rows > 1 && rows > typical_rows && (rows / 2) * tpr >= 32) break;  // rows the grid never fills
        if (threads > 512 && rows > 1) break;
        out.push_back(RowGeometryChoice{tpr, vec, rows, chunks});
      }
    }
  }
  return out;
}

std::vector<int> row_vector_widths(int64_t cols, int max_vec) {
  std::vector<int> out;
  for (int vec : {max_vec, max_vec / 2})
    if (vec >= 2 && cols % vec == 0) out.push_back(vec);
  if (out.empty()) out.push_back(1);
  return out;
}

double row_geometry_score(const RowGeometryChoice& g, int max_vec, int64_t typical_rows, const DeviceProfile& device,
                          std::vector<std::string>* notes) {
  const int64_t blocks = (typical_rows + g.rows - 1) / g.rows;
  const int threads = g.tpr * g.rows;
  const bool few_rows = typical_rows < device.multiprocessors;
  // Full 16-byte accesses move the most bytes per instruction.
  const double vec_pref = g.vec >= max_vec ? 1.0 : g.vec * 2 >= max_vec ? 0.85 : 0.6;
  // With few rows the latency is a thread's serial share of one row: one chunk is best. With many
  // rows a few chunks per thread put more bytes in flight at no cost.
  const double chunk_pref = few_rows ? 1.0 / (1.0 + 0.15 * (g.chunks - 1))
                                     : g.chunks <= 4 ? 1.0 - 0.02 * (g.chunks - 1) : 0.9 - 0.01 * g.chunks;
  // A row wider than a warp pays a shared-memory round and two barriers per reduction.
  const double reduce_pref = g.tpr <= 32 ? 1.0 : g.tpr <= 256 ? 0.97 : g.tpr == 512 ? 0.93 : 0.9;
  const double block_pref = threads >= 128 && threads <= 512 ? 1.0 : threads == 64 || threads == 1024 ? 0.95 : 0.9;
  // Enough blocks for two per SM, where there are rows to give them.
  const double fill = few_rows ? 1.0 : std::min(1.0, static_cast<double>(blocks) / (2.0 * device.multiprocessors));
  if (notes) {
    char text[200];
    std::snprintf(text, sizeof(text), "%d threads/row x %d rows/block, %d chunk(s) of %d per thread; %lld blocks at %lld rows",
                  g.tpr, g.rows, g.chunks, g.vec, static_cast<long long>(blocks), static_cast<long long>(typical_rows));
    notes->push_back(text);
    if (g.vec < max_vec) notes->push_back("narrower than 16-byte accesses");
    if (!few_rows && fill < 1.0) notes->push_back("fewer than 2 blocks per SM at this row count");
  }
  return fill * vec_pref * chunk_pref * reduce_pref * block_pref;
}

RowGeometryChoice conservative_row_geometry(int64_t cols, int max_elems) {
  int tpr = 32;
  while (tpr < 1024 && (cols + tpr - 1) / tpr > max_elems) tpr *= 2;
  return RowGeometryChoice{tpr, 1, 1, static_cast<int>((cols + tpr - 1) / tpr)};
}

std::vector<RowSplitChoice> row_split_geometries(int64_t cols, int64_t typical_rows, int vec, const DeviceProfile& device) {
  std::vector<RowSplitChoice> out;
  if (typical_rows >= device.multiprocessors || cols < 4096 || vec < 1 || cols % vec != 0) return out;
  for (int split = 4; split <= 256; split *= 2) {
    if (typical_rows * split > 4 * device.multiprocessors) break;
    const int64_t slice = ((cols + split - 1) / split + vec - 1) / vec * vec;
    for (int tpr : {32, 64, 128, 256, 512}) {
      if (tpr > device.max_threads_per_block || slice < static_cast<int64_t>(tpr) * vec) continue;
      const int steps = static_cast<int>((slice + static_cast<int64_t>(tpr) * vec - 1) / (static_cast<int64_t>(tpr) * vec));
      out.push_back(RowSplitChoice{tpr, vec, split, steps});
    }
  }
  return out;
}

double row_split_score(const RowSplitChoice& g, int64_t typical_rows, const DeviceProfile& device,
                       std::vector<std::string>* notes) {
  const int64_t blocks = typical_rows * g.split;
  const double fill = std::min(1.0, static_cast<double>(blocks) / device.multiprocessors);
  // A few vectors per thread keep loads in flight; many make the slice a serial loop.
  const double step_pref = g.steps >= 2 && g.steps <= 8 ? 1.0 : g.steps == 1 ? 0.95 : std::sqrt(8.0 / g.steps);
  const double reduce_pref = g.tpr <= 32 ? 1.0 : g.tpr <= 256 ? 0.97 : 0.93;
  if (notes) {
    char text[200];
    std::snprintf(text, sizeof(text), "split: %d blocks of %d threads per row, %d vector(s) of %d per thread; %lld blocks in all",
                  g.split, g.tpr, g.steps, g.vec, static_cast<long long>(blocks));
    notes->push_back(text);
    notes->push_back("second launch combines the partials (workspace)");
  }
  return 0.95 * fill * step_pref * reduce_pref;  // 0.95: the second launch
}

std::string rows_tag(int64_t rows_per_token, int64_t rows_fixed) {
  if (rows_per_token == 0) return "m" + std::to_string(rows_fixed);
  std::string tag = "m" + (rows_per_token == 1 ? std::string() : std::to_string(rows_per_token)) + "T";
  return rows_fixed == 0 ? tag : tag + "p" + std::to_string(rows_fixed);
}

std::string eps_tag(float eps) {
  for (int k = 1; k <= 12; ++k)
    if (eps == static_cast<float>(std::pow(10.0, -k))) return "e" + std::to_string(k);
  uint32_t bits = 0;
  std::memcpy(&bits, &eps, sizeof(bits));
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "ex%08x", bits);
  return buffer;
}

RowSchedule row_schedule(const RowGeometryChoice& g) { return RowSchedule{g.tpr, g.vec, g.rows, 0, false}; }
RowSchedule row_schedule(const RowSplitChoice& g) { return RowSchedule{g.tpr, g.vec, 1, g.split, false}; }

ParamSet row_params_view(const RowSchedule& s) {
  ParamSet p{{"tpr", s.tpr}, {"vec", s.vec}};
  if (s.split)
    p["split"] = s.split;
  else
    p["rows"] = s.rows;
  if (s.fallback) p["fallback"] = 1;
  return p;
}

RowSchedule row_fallback_schedule(int64_t cols) {
  const RowGeometryChoice safe = conservative_row_geometry(cols, 16);
  return RowSchedule{safe.tpr, 1, 1, 0, true};
}

Launch row_launch(int64_t rows_per_token, int64_t rows_fixed, const RowSchedule& s, const std::string& kernel) {
  Launch launch;
  launch.kernel = kernel;
  launch.grid_x = Extent{rows_per_token, rows_fixed, s.rows};
  launch.block_x = static_cast<int>(s.tpr * s.rows);
  return launch;
}

std::vector<Launch> row_or_split_launches(int64_t rows_per_token, int64_t rows_fixed, const RowSchedule& s, const std::string& kernel) {
  if (!s.split) return {row_launch(rows_per_token, rows_fixed, s, kernel)};
  Launch stats;
  stats.kernel = kernel + "_stats";
  stats.grid_x = Extent{rows_per_token, rows_fixed, 1};
  stats.grid_y = Extent{0, s.split, 1};
  stats.block_x = static_cast<int>(s.tpr);
  Launch write = stats;
  write.kernel = kernel + "_write";
  return {stats, write};
}

int64_t split_partials(int64_t rows, const RowSchedule& s, int64_t bytes) { return s.split ? rows * s.split * bytes : 0; }

}  // namespace agentcompile::plan
