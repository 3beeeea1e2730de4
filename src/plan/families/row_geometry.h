// Row geometry shared by the row families (rmsnorm, layernorm, softmax, reduction, scan,
// elementwise, embedding) and the column forms: threads per row, vector widths, rows per block, the
// split forms for few long rows, the heuristics that rank them, and the launches they make.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/template_family.h"

namespace agentcompile::plan {

// Row geometry shared by the row families: TPR threads per row, VEC columns per access, ROWS rows
// per block, and the heuristic that ranks a choice for a memory-bound row kernel.
struct RowGeometryChoice {
  int tpr = 32, vec = 1, rows = 1;
  int chunks = 1;  // vectors per thread per row
};
// Every geometry valid on the device for rows of `cols` columns: threads per block a multiple of 32
// and at most the device's limit, cols % vec == 0, at least one vector per thread, and at most
// `max_chunks` chunks per thread (register-resident rows); `vecs` lists the vector widths to try.
std::vector<RowGeometryChoice> row_geometries(int64_t cols, int64_t typical_rows, const std::vector<int>& vecs,
                                              int max_chunks, const DeviceProfile& device);
// The vector widths worth trying for rows of `cols` columns: the widest (max_vec) and half of it
// where they divide the row, else scalar accesses.
std::vector<int> row_vector_widths(int64_t cols, int max_vec);
// Heuristic score of a geometry for a memory-bound row kernel (higher first) and the reason.
double row_geometry_score(const RowGeometryChoice& g, int max_vec, int64_t typical_rows, const DeviceProfile& device,
                          std::vector<std::string>* notes);
// The most conservative geometry: scalar accesses (no alignment assumed), one row per block, the
// fewest threads that keep a thread's share of the row within `max_chunks` elements.
RowGeometryChoice conservative_row_geometry(int64_t cols, int max_chunks);

// Split forms for few long rows (a vocabulary): SPLIT blocks of TPR threads share a row, one slice
// of columns each, and a second launch combines their partials through the workspace.
struct RowSplitChoice {
  int tpr = 256, vec = 1, split = 1;
  int steps = 1;  // vectors per thread in a slice
};
// Offered only where rows are fewer than the SMs and long (>= 4096 columns): splits that fill the
// machine without more than ~4 blocks per SM, every thread with at least one vector.
std::vector<RowSplitChoice> row_split_geometries(int64_t cols, int64_t typical_rows, int vec, const DeviceProfile& device);
double row_split_score(const RowSplitChoice& g, int64_t typical_rows, const DeviceProfile& device,
                       std::vector<std::string>* notes);

// "m1", "mT", "m16T": the rows of a launch in a kernel name (rows_per_token * T + rows_fixed).
std::string rows_tag(int64_t rows_per_token, int64_t rows_fixed);

// A row family's schedule: TPR threads per row, VEC columns per access and ROWS rows per block, or the
// split form (SPLIT blocks of TPR threads per row, two launches).
struct RowSchedule {
  int64_t tpr = 32, vec = 1, rows = 1;
  int64_t split = 0;  // > 0: the split form (rows unused)
  bool fallback = false;
};
RowSchedule row_schedule(const RowGeometryChoice& g);
RowSchedule row_schedule(const RowSplitChoice& g);
// The serialized view: tpr, vec, then rows or split, and fallback = 1 for the fallback.
ParamSet row_params_view(const RowSchedule& schedule);

// The conservative fallback of a row family: scalar accesses, one row per block.
RowSchedule row_fallback_schedule(int64_t cols);
constexpr double kRowFallbackScore = 0.01;

// The one-launch geometry the row families share: `rows` rows per block of tpr * rows threads, over
// rows_per_token * T + rows_fixed rows.
Launch row_launch(int64_t rows_per_token, int64_t rows_fixed, const RowSchedule& schedule, const std::string& kernel);
// The launches of a row family: row_launch, or for the split form two passes (KERNEL_stats:
// statistics per row and slice on a rows x split grid; KERNEL_write: every slice normalizes itself,
// same grid).
std::vector<Launch> row_or_split_launches(int64_t rows_per_token, int64_t rows_fixed, const RowSchedule& schedule,
                                          const std::string& kernel);
// Scratch of the split (two-launch) forms: `bytes` per row and slice; 0 without a split.
int64_t split_partials(int64_t rows, const RowSchedule& schedule, int64_t bytes);

// "e6" for eps == 1e-6 (as fp32), else "ex" and the fp32 bits in hex: eps in a kernel name.
std::string eps_tag(float eps);

}  // namespace agentcompile::plan
