// gpu/lib/tma_panels_wgmma_probe.hpp — does one TMA copy of a box of several 64-column panels (a 3-D
// tensor map, TmaTile2d::box_panels; gpu/lib/hopper/tma.cuh) put every element where the model
// says, with zeros for rows and panels outside the matrix? Plain C++ (no CUDA types), for
// tests/hopper_lib_test.cpp; implemented in tma_panels_wgmma_probe.cu, which exists only in
// builds with CONVLAB_CUDA.
//
// The probe: one CTA poisons its shared tile, asks for the box whose first element is (row0,
// col0) of a rows × cols row-major 16-bit matrix, box_rows × box_panels·64, with one
// tma_load_panels, and compares every element of the tile, read through
// tma_sw128_panels_offset, with the matrix (zero outside it).
#pragma once

#include <cstdint>
#include <vector>

namespace convlab::gpu {

inline constexpr int kTmaPanelsProbeMaxBytes = 192 * 1024;  // the tile the probe's CTA may hold

struct TmaPanelsCase {
  int rows = 0, cols = 0;          // the matrix (cols a multiple of 64)
  int box_rows = 0, box_panels = 0;
  int row0 = 0, col0 = 0;          // the box's first element (col0 a multiple of 64)
};

// The count of wrong elements of the tile (0 when every element is where the model says).
// `matrix` holds rows · cols values. Throws DeviceError when the GPU fails, std::invalid_argument
// on a case the encoder or the probe does not take, std::runtime_error when sm_90 code cannot run.
int run_tma_panels_probe(const TmaPanelsCase& c, const std::vector<uint16_t>& matrix);

}  // namespace convlab::gpu
