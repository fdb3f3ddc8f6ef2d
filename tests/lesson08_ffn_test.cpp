// tests/lesson08_ffn_test.cpp — lesson 08's claims that the registry tests do not check.
//
// The registry tests (tests/main.cpp) run every ffn variant on the test table
// against the double reference, within the rounding bound. Four promises of
// the lesson are sharper than that:
//
//   1. Loop fusion (Eq. 32) is an identity, not an approximation: on
//      integer-valued inputs with ReLU every partial sum is an integer below
//      2^24, so fp32 arithmetic is exact and the CPU loop-fused rung must
//      equal the reference bit for bit, whatever its chunking and tiling.
//   2. The fused CPU rung's workspace does not grow with P (the layer-by-layer
//      rung's holds the whole P × hidden tensor).
//   3. gpu/ffn/08c_fused_tensor_core hands the fp32 accumulators of GEMM 1 to
//      GEMM 2 as its A operand without any shuffle: the D fragments of two
//      adjacent m16n8 tiles hold, lane for lane, the A fragment of one m16k16
//      tile. Checked on the host against the PTX model in gpu/lib/mma.cuh.
//   4. The same kernel's whole data path for one warp — swizzled cp.async
//      stores, ldmatrix (plain and .trans) addresses, mma fragments, the
//      accumulator-to-operand hand-over, the zero-filled edges (rows ≥ P, a
//      partial hidden chunk) and the epilogue — emulated on the host with the
//      kernel's own index expressions and the PTX semantics of each
//      instruction, on integer data where every step is exact.
#include <array>
#include <cmath>
#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "ops/ffn.hpp"
#include "gpu/lib/mma.cuh"
#include "reference/ffn.hpp"
#include "tests/catch_compat.hpp"

namespace convlab {
namespace {

const Variant<FfnProblem>* cpu_variant(const std::string& name) {
  for (const Variant<FfnProblem>& v : Registry<FfnProblem>::variants())
    if (v.name == name && v.device == Device::cpu) return &v;
  return nullptr;
}

std::vector<float> integers(std::size_t n, int lo, int hi, std::mt19937_64& rng) {
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<float> out(n);
  for (float& f : out) f = float(d(rng));
  return out;
}

TEST_CASE("lesson 08: the loop-fused CPU FFN equals the layer-by-layer reference exactly on integers",
          "[ffn][cpu][lesson08]") {
  for (const std::string name : {"08b_loop_fused", "08a_layer_by_layer"}) {
    const Variant<FfnProblem>* v = cpu_variant(name);
    REQUIRE(v != nullptr);
    // P leaves a partial row tile, hidden a partial chunk, C and C_out odd.
    const FfnProblem p{250, 40, 300, 24, FfnActivation::relu, DType::f32};
    std::mt19937_64 rng(8);
    // |x·u + a| <= 40·2·2 + 3 = 163, |Σ h·v + b| <= 300·163·2 + 3 < 2^24: exact in fp32.
    const auto x = integers(std::size_t(p.P) * p.C, -2, 2, rng), u = integers(std::size_t(p.C) * p.hidden, -2, 2, rng),
               a = integers(p.hidden, -3, 3, rng), vv = integers(std::size_t(p.hidden) * p.C_out, -2, 2, rng),
               b = integers(p.C_out, -3, 3, rng);
    std::vector<float> z(std::size_t(p.P) * p.C_out, -12345.0f);
    Tensor workspace({int64_t((v->workspace_bytes(p) + 3) / 4)}, DType::f32);  // 64-byte aligned, as the harness's
    v->run(p, {x.data(), u.data(), a.data(), vv.data(), b.data(), z.data(), workspace.data()});

    const auto as_double = [](const std::vector<float>& f) { return std::vector<double>(f.begin(), f.end()); };
    std::vector<double> ref(z.size());
    ref::ffn({p.P, p.C, p.hidden, p.C_out, p.activation}, as_double(x).data(), as_double(u).data(), as_double(a).data(),
             as_double(vv).data(), as_double(b).data(), ref.data());
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < z.size(); ++i) mismatches += double(z[i]) != ref[i];
    INFO(name);
    CHECK(mismatches == 0);
  }
}

TEST_CASE("lesson 08: the loop-fused CPU FFN's workspace does not grow with P", "[ffn][cpu][lesson08]") {
  const Variant<FfnProblem>* fused = cpu_variant("08b_loop_fused");
  const Variant<FfnProblem>* layered = cpu_variant("08a_layer_by_layer");
  REQUIRE(fused != nullptr);
  REQUIRE(layered != nullptr);
  const FfnProblem small{1000, 64, 256, 64, FfnActivation::relu, DType::f32};
  FfnProblem large = small;
  large.P = 128 * 56 * 56;
  CHECK(fused->workspace_bytes(small) == fused->workspace_bytes(large));
  // and it is far below the hidden tensor the layer-by-layer rung keeps, even for small P.
  CHECK(fused->workspace_bytes(large) < std::size_t(small.P) * small.hidden * sizeof(float));
  CHECK(layered->workspace_bytes(large) >= std::size_t(large.P) * large.hidden * sizeof(float));
}

TEST_CASE("lesson 08: two m16n8 accumulator tiles are one m16k16 A fragment, lane for lane", "[mma][cpu][lesson08]") {
  // The fused kernel builds A register r of the second mma from accumulator
  // tile n = r >> 1 (hidden columns 0-7 or 8-15 of the k16 slice), elements
  // 2·(r & 1) and 2·(r & 1) + 1 (rows g or g + 8).
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg)
      for (int half = 0; half < 2; ++half) {
        const int n_tile = reg >> 1, c_index = 2 * (reg & 1) + half;
        const gpu::MatrixCoord in_d = gpu::mma_c_coord(lane, c_index);  // {row, column within the n8 tile}
        const gpu::MatrixCoord in_a = gpu::mma_a_coord(lane, reg, half);  // {row, k}
        INFO("lane " << lane << " reg " << reg << " half " << half);
        CHECK(in_a == gpu::MatrixCoord{in_d.row, in_d.col + 8 * n_tile});
      }
}

TEST_CASE("lesson 08: FfnProblem counts the layer-by-layer bytes on top of the fused form's", "[ffn][cpu][lesson08]") {
  const FfnProblem p{128 * 56 * 56, 64, 256, 64, FfnActivation::relu, DType::f16};
  // x and z: 2 · 401408 · 64 · 2 bytes; weights and biases: (2 · 64 · 256 + 256 + 64) · 2.
  CHECK(p.min_bytes() == 2.0 * 401408 * 64 * 2 + (2.0 * 64 * 256 + 256 + 64) * 2);
  CHECK(p.layer_by_layer_bytes() == p.min_bytes() + 2.0 * (4.0 * 401408 * 256 + 2.0 * 401408 * 64));
  CHECK(p.flops() == 2.0 * 401408 * (64.0 * 256 + 256.0 * 64));
}

TEST_CASE("lesson 08: every ffn variant declares the bytes its form moves", "[ffn][cpu][lesson08]") {
  // From the registry, both devices, no case made: the layer-by-layer rungs
  // move H (and z) through DRAM, the fused ones only the compulsory bytes.
  const FfnProblem p{1000, 64, 256, 64, FfnActivation::relu, DType::f32};
  int layer_by_layer = 0, fused = 0;
  for (const Variant<FfnProblem>& v : Registry<FfnProblem>::variants()) {
    INFO(v.name);
    const double model = v.model_bytes ? v.model_bytes(p) : p.min_bytes();
    if (v.name.find("layer_by_layer") != std::string::npos) {
      CHECK(model == p.layer_by_layer_bytes());
      ++layer_by_layer;
    } else if (v.name.find("fused") != std::string::npos) {
      CHECK(model == p.min_bytes());
      ++fused;
    }
  }
  CHECK(layer_by_layer >= 1);
  CHECK(fused >= 1);
}

// ---- a host emulation of one warp of gpu/ffn/08c_fused_tensor_core ---------------------
//
// Shared memory is an array of 2-byte slots (holding floats, so NaN marks a
// slot never written: any read of one poisons the result). The expressions
// that compute shared offsets, ldmatrix row addresses and fragment indices are
// the kernel's, character for character — a transcription: a change to the
// kernel's indexing must be copied here, or this test checks the old one (the
// kernel itself is checked on a GPU by the registry tests); the instructions are modelled from
// the PTX ISA (as gpu/lib/mma.cuh describes them).
using LaneRegs = std::array<std::array<std::array<float, 2>, 4>, 32>;  // [lane][register][half]

// ldmatrix.x4: lane l supplies the byte address of row l % 8 of matrix l / 8.
// Plain: register m of lane 4r + w = elements 2w, 2w+1 of row r of matrix m.
// .trans: register m of lane 4r + w = element r of rows 2w and 2w+1.
LaneRegs ldmatrix(const std::vector<float>& smem, const std::array<int, 32>& address, bool trans) {
  LaneRegs out{};
  for (int lane = 0; lane < 32; ++lane)
    for (int m = 0; m < 4; ++m)
      for (int h = 0; h < 2; ++h) {
        const int r = lane / 4, w = lane % 4;
        out[lane][m][h] = trans ? smem.at(address[8 * m + 2 * w + h] / 2 + r) : smem.at(address[8 * m + r] / 2 + 2 * w + h);
      }
  return out;
}

// mma.m16n8k16: D[16x8] += A[16x16]·B[16x8] with the lane maps of mma.cuh.
// a[lane] = 4 registers, b[lane] = 2 registers (2 halves each), d[lane] = 4 floats.
void mma(std::array<std::array<float, 4>, 32>& d, const LaneRegs& a, const std::array<std::array<std::array<float, 2>, 2>, 32>& b) {
  float A[16][16], B[16][8];
  for (int lane = 0; lane < 32; ++lane)
    for (int reg = 0; reg < 4; ++reg)
      for (int half = 0; half < 2; ++half) {
        const gpu::MatrixCoord c = gpu::mma_a_coord(lane, reg, half);
        A[c.row][c.col] = a[lane][reg][half];
        if (reg < 2) {
          const gpu::MatrixCoord kb = gpu::mma_b_coord(lane, reg, half);
          B[kb.row][kb.col] = b[lane][reg][half];
        }
      }
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      const gpu::MatrixCoord c = gpu::mma_c_coord(lane, i);
      float sum = 0;
      for (int k = 0; k < 16; ++k) sum += A[c.row][k] * B[k][c.col];
      d[lane][i] += sum;
    }
}

template <int C, int TH, int WarpRows> void emulate_fused_warp() {
  constexpr int kChunkElems = 8, kMmaM = 16, kMmaN = 8, kMmaK = 16;
  constexpr int kRowElems = C < 32 ? 32 : C;
  using SwizzleX = gpu::ChunkSwizzle<kRowElems / kChunkElems>;
  using SwizzleU = gpu::ChunkSwizzle<TH / kChunkElems>;
  using SwizzleV = gpu::ChunkSwizzle<kRowElems / kChunkElems>;
  constexpr int kMTiles = WarpRows / 16, kHTiles = TH / 8, kZTiles = C / 8, kKSteps1 = C / 16, kKSteps2 = TH / 16;
  const int P = WarpRows - 5, hidden = TH + 8;  // partial rows, and a partial second chunk
  const int chunks = (hidden + TH - 1) / TH;
  const int warp_row0 = 0;
  std::mt19937_64 rng(C * 1000 + TH);
  const auto x = integers(std::size_t(P) * C, -2, 2, rng), u = integers(std::size_t(C) * hidden, -2, 2, rng),
             a = integers(hidden, -3, 3, rng), v = integers(std::size_t(hidden) * C, -2, 2, rng),
             b = integers(C, -3, 3, rng);

  const float kUnwritten = std::nanf("");
  std::vector<float> xs(WarpRows * kRowElems, kUnwritten);  // X tile slots (this warp's rows only)
  for (int r = 0; r < WarpRows; ++r)
    for (int piece = 0; piece < C / kChunkElems; ++piece) {
      const bool in = r < P;
      for (int e = 0; e < kChunkElems; ++e)
        xs[SwizzleX::byte_offset(r, piece) / 2 + e] = in ? x[std::size_t(r) * C + piece * kChunkElems + e] : 0.0f;
    }

  std::array<std::array<std::array<std::array<float, 4>, 32>, kZTiles>, kMTiles> z_acc{};  // [mi][ni][lane][i]
  for (int r = 0; r < chunks; ++r) {
    const int h0 = r * TH;
    std::vector<float> us(C * TH, kUnwritten), vs(TH * kRowElems, kUnwritten);
    for (int c = 0; c < C; ++c)
      for (int piece = 0; piece < TH / kChunkElems; ++piece) {
        const int col = h0 + piece * kChunkElems;
        const bool in = col < hidden;
        for (int e = 0; e < kChunkElems; ++e)
          us[SwizzleU::byte_offset(c, piece) / 2 + e] = in ? u[std::size_t(c) * hidden + col + e] : 0.0f;
      }
    for (int k = 0; k < TH; ++k)
      for (int piece = 0; piece < C / kChunkElems; ++piece) {
        const int row = h0 + k;
        const bool in = row < hidden;
        for (int e = 0; e < kChunkElems; ++e)
          vs[SwizzleV::byte_offset(k, piece) / 2 + e] = in ? v[std::size_t(row) * C + piece * kChunkElems + e] : 0.0f;
      }

    std::array<std::array<std::array<std::array<float, 4>, 32>, kHTiles>, kMTiles> h{};  // [mi][ni][lane][i]
    for (int lane = 0; lane < 32; ++lane) {
      const int t = lane % 4;
      for (int ni = 0; ni < kHTiles; ++ni) {
        const int col = h0 + ni * kMmaN + 2 * t;
        const float a0 = col < hidden ? a[col] : 0.0f, a1 = col < hidden ? a[col + 1] : 0.0f;
        for (int mi = 0; mi < kMTiles; ++mi) h[mi][ni][lane] = {a0, a1, a0, a1};
      }
    }
    for (int s = 0; s < kKSteps1; ++s) {
      std::array<LaneRegs, kMTiles> x_frag;
      for (int mi = 0; mi < kMTiles; ++mi) {
        std::array<int, 32> address;
        for (int lane = 0; lane < 32; ++lane) {
          const gpu::MatrixCoord lane_row = gpu::ldmatrix_x4_row_address(lane);
          address[lane] = SwizzleX::byte_offset(warp_row0 + mi * kMmaM + lane_row.row, (s * kMmaK + lane_row.col) / kChunkElems);
        }
        x_frag[mi] = ldmatrix(xs, address, false);
      }
      for (int nj = 0; nj < kHTiles / 2; ++nj) {
        std::array<int, 32> address;
        for (int lane = 0; lane < 32; ++lane) {
          const gpu::MatrixCoord lane_row = gpu::ldmatrix_x4_row_address(lane);
          address[lane] = SwizzleU::byte_offset(s * kMmaK + lane_row.row, (nj * 16 + lane_row.col) / kChunkElems);
        }
        const LaneRegs u_frag = ldmatrix(us, address, true);
        std::array<std::array<std::array<float, 2>, 2>, 32> b_lo, b_hi;
        for (int lane = 0; lane < 32; ++lane) {
          b_lo[lane] = {u_frag[lane][0], u_frag[lane][1]};
          b_hi[lane] = {u_frag[lane][2], u_frag[lane][3]};
        }
        for (int mi = 0; mi < kMTiles; ++mi) {
          mma(h[mi][2 * nj], x_frag[mi], b_lo);
          mma(h[mi][2 * nj + 1], x_frag[mi], b_hi);
        }
      }
    }
    for (auto& tile_m : h)
      for (auto& tile : tile_m)
        for (auto& lane_values : tile)
          for (float& e : lane_values) e = std::max(e, 0.0f);  // ReLU (NaN stays NaN: std::max(NaN, 0) is NaN)
    for (int kk = 0; kk < kKSteps2; ++kk) {
      std::array<LaneRegs, kMTiles> h_frag;
      for (int mi = 0; mi < kMTiles; ++mi)
        for (int lane = 0; lane < 32; ++lane) {
          h_frag[mi][lane][0] = {h[mi][2 * kk][lane][0], h[mi][2 * kk][lane][1]};
          h_frag[mi][lane][1] = {h[mi][2 * kk][lane][2], h[mi][2 * kk][lane][3]};
          h_frag[mi][lane][2] = {h[mi][2 * kk + 1][lane][0], h[mi][2 * kk + 1][lane][1]};
          h_frag[mi][lane][3] = {h[mi][2 * kk + 1][lane][2], h[mi][2 * kk + 1][lane][3]};
        }
      for (int nj = 0; nj < kZTiles / 2; ++nj) {
        std::array<int, 32> address;
        for (int lane = 0; lane < 32; ++lane) {
          const gpu::MatrixCoord lane_row = gpu::ldmatrix_x4_row_address(lane);
          address[lane] = SwizzleV::byte_offset(kk * kMmaK + lane_row.row, (nj * 16 + lane_row.col) / kChunkElems);
        }
        const LaneRegs v_frag = ldmatrix(vs, address, true);
        std::array<std::array<std::array<float, 2>, 2>, 32> b_lo, b_hi;
        for (int lane = 0; lane < 32; ++lane) {
          b_lo[lane] = {v_frag[lane][0], v_frag[lane][1]};
          b_hi[lane] = {v_frag[lane][2], v_frag[lane][3]};
        }
        for (int mi = 0; mi < kMTiles; ++mi) {
          mma(z_acc[mi][2 * nj], h_frag[mi], b_lo);
          mma(z_acc[mi][2 * nj + 1], h_frag[mi], b_hi);
        }
      }
    }
  }

  std::vector<float> z(std::size_t(P) * C, kUnwritten);
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int ni = 0; ni < kZTiles; ++ni) {
      const int col = ni * kMmaN + 2 * t;
      for (int mi = 0; mi < kMTiles; ++mi)
        for (int half = 0; half < 2; ++half) {
          const int row = warp_row0 + mi * kMmaM + g + 8 * half;
          if (row >= P) continue;
          z[std::size_t(row) * C + col] = z_acc[mi][ni][lane][2 * half] + b[col];
          z[std::size_t(row) * C + col + 1] = z_acc[mi][ni][lane][2 * half + 1] + b[col + 1];
        }
    }
  }
  std::vector<double> ref(z.size());
  const auto as_double = [](const std::vector<float>& f) { return std::vector<double>(f.begin(), f.end()); };
  ref::ffn({P, C, hidden, C, ref::Activation::relu}, as_double(x).data(), as_double(u).data(), as_double(a).data(),
           as_double(v).data(), as_double(b).data(), ref.data());
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < z.size(); ++i) mismatches += !(double(z[i]) == ref[i]);
  INFO("C " << C << ", TH " << TH << ", warp rows " << WarpRows);
  CHECK(mismatches == 0);
}

TEST_CASE("lesson 08: one warp of the fused tensor-core kernel, emulated on the host, is exact on integers",
          "[mma][cpu][lesson08]") {
  emulate_fused_warp<16, 64, 32>();   // Config16: X and V rows padded to 32 elements
  emulate_fused_warp<32, 64, 32>();   // Config32
  emulate_fused_warp<64, 64, 32>();   // Config64
  emulate_fused_warp<128, 64, 16>();  // Config128
  emulate_fused_warp<256, 32, 16>();  // Config256: 64-byte U rows
}

}  // namespace
}  // namespace convlab
