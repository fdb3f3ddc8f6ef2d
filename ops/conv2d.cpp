#include "ops/conv2d.hpp"

#include "reference/conv2d.hpp"

namespace convlab {

template void register_op_handle<ConvProblem>();

std::vector<TensorSpec> OpTraits<ConvProblem>::inputs(const ConvProblem& p) {
  return {{"x", {p.N, p.H, p.W, p.C}, p.dtype, "NHWC"}, {"w", {p.K, p.R, p.S, p.T()}, p.dtype, "KRSC"}};
}

std::vector<TensorSpec> OpTraits<ConvProblem>::outputs(const ConvProblem& p) {
  return {{"y", {p.N, p.P(), p.Q(), p.K}, p.dtype, "NHWC"}};
}

Args<ConvProblem> OpTraits<ConvProblem>::bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* ws) {
  return {in.at(0).data(), in.at(1).data(), out.at(0).data(), ws};
}

void OpTraits<ConvProblem>::reference(const ConvProblem& p, const std::vector<std::vector<double>>& in,
                                      std::vector<std::vector<double>>& out) {
  ref::conv2d(p, in.at(0).data(), in.at(1).data(), out.at(0).data());
}

namespace {

ConvProblem conv(int N, int H, int W, int C, int K, int R, int S, int stride, int pad, int groups,
                 DType dtype = DType::f32) {
  return {N, H, W, C, K, R, S, stride, pad, groups, dtype};
}

// Correctness table: every shape that has broken a tiled kernel somewhere —
// ones, primes, tile ± 1, odd spatial sizes, batch 1, strides, groups.
std::vector<ConvProblem> test_shapes() {
  std::vector<ConvProblem> t = {
      conv(1, 1, 1, 1, 1, 1, 1, 1, 0, 1),      // everything 1
      conv(2, 5, 7, 3, 5, 3, 3, 1, 1, 1),      // tiny, odd, padded
      conv(1, 8, 8, 16, 16, 1, 1, 1, 0, 1),    // pointwise: a GEMM
      conv(3, 7, 5, 8, 12, 3, 3, 2, 1, 1),     // stride 2, odd sizes
      conv(1, 13, 11, 17, 31, 3, 3, 1, 1, 1),  // primes everywhere
      conv(1, 17, 17, 33, 65, 5, 5, 1, 2, 1),  // tile + 1 (16, 32, 64 tiles), 5x5
      conv(2, 4, 4, 7, 9, 3, 2, 1, 0, 1),      // non-square filter, no padding
      conv(2, 9, 9, 16, 32, 3, 3, 1, 1, 2),    // grouped, group width 8
      conv(1, 10, 6, 24, 24, 3, 3, 1, 1, 24),  // depthwise
      conv(1, 16, 16, 64, 64, 3, 3, 1, 1, 1),  // a typical layer, tile-aligned
      conv(1, 15, 15, 64, 63, 3, 3, 1, 1, 1),  // tile − 1
      conv(1, 23, 19, 3, 8, 7, 7, 2, 3, 1),    // a network stem
      conv(3, 9, 6, 5, 7, 3, 3, 1, 0, 1),      // 3x3 stride 1, no padding: odd/even tile edges (Winograd)
      conv(2, 11, 10, 20, 13, 3, 3, 1, 2, 1),  // 3x3 pad 2: whole tiles of padding
      // lesson 06's degenerate kinds, at the sizes that break their tilings:
      conv(2, 7, 9, 13, 13, 3, 3, 1, 1, 13),   // depthwise, odd C (no vector of channels), odd W
      conv(1, 11, 13, 40, 40, 3, 3, 2, 1, 40), // depthwise, stride 2, odd sizes
      conv(1, 9, 9, 17, 17, 5, 5, 1, 2, 17),   // depthwise 5x5
      conv(2, 7, 5, 24, 24, 3, 3, 1, 1, 3),    // grouped T = 8, K/groups = 8 (ConvFirst), odd sizes
      conv(1, 9, 11, 64, 64, 3, 3, 2, 1, 2),   // grouped T = 32, stride 2
      conv(3, 5, 7, 13, 21, 1, 1, 1, 0, 1),    // pointwise, odd M = 105, C = 13, K = 21
      conv(1, 9, 9, 24, 24, 5, 5, 2, 2, 24),   // depthwise 5x5, stride 2, C a multiple of 8
      conv(1, 6, 7, 16, 80, 3, 3, 1, 1, 2),    // grouped, wide groups: K/groups = 40
      conv(1, 7, 9, 8, 16, 3, 3, 1, 1, 8),     // grouped T = 1 with a channel multiplier (K/groups = 2)
      conv(1, 6, 5, 16, 128, 3, 3, 1, 1, 2),   // grouped, K/groups = 64
      conv(1, 6, 6, 260, 8, 3, 3, 1, 1, 1),    // 3x3, C = 260: Winograd's U no longer prepacked
      // C = 260, 22x22: the im2col GEMM's depth (2340) past KC = 256 and its
      // rows (484) past one 4 MiB patch slab (432 rows); F(2x2,3x3) in 5 and
      // F(4x4,3x3) in 3 slabs of 512 KiB (cpu/conv2d/02b_im2col_gemm.cpp, winograd_cpu.hpp)
      conv(1, 22, 22, 260, 8, 3, 3, 1, 1, 1),
      // K = 130 output channels and M = 135 pixels, both past the GPU implicit
      // GEMM's 128 x 128 block tile and ragged; reduction 180, not a multiple of its 8-deep slice
      conv(1, 9, 15, 20, 130, 3, 3, 1, 1, 1),
      // depthwise with more strips than one wave of the GPU kernel's resident
      // threads hold (~4–8 K on an H200): its blocks loop over items
      conv(16, 58, 57, 64, 64, 3, 3, 1, 1, 64),
      // depthwise C = 264: 66 float chunks, three channel slabs, the last part-filled; odd P
      conv(1, 9, 7, 264, 264, 3, 3, 1, 1, 264),
  };
  for (ConvProblem p : {conv(2, 5, 7, 3, 5, 3, 3, 1, 1, 1), conv(1, 13, 11, 17, 31, 3, 3, 1, 1, 1),
                        conv(1, 16, 16, 64, 64, 3, 3, 1, 1, 1), conv(2, 9, 9, 16, 32, 3, 3, 2, 1, 2),
                        conv(3, 9, 6, 5, 7, 3, 3, 1, 0, 1),
                        conv(2, 7, 9, 24, 24, 3, 3, 1, 1, 24), conv(1, 6, 5, 13, 13, 3, 3, 2, 1, 13),
                        conv(1, 11, 13, 40, 40, 3, 3, 2, 1, 40), conv(2, 7, 5, 24, 24, 3, 3, 1, 1, 3),
                        conv(1, 9, 11, 64, 64, 3, 3, 2, 1, 2), conv(3, 5, 7, 13, 21, 1, 1, 1, 0, 1),
                        conv(2, 5, 7, 24, 40, 1, 1, 1, 0, 1), conv(1, 9, 9, 24, 24, 5, 5, 2, 2, 24),
                        conv(16, 58, 57, 64, 64, 3, 3, 1, 1, 64),
                        // dense fp16 past the tensor-core implicit GEMM's 128 x 128 tile in M and K,
                        // with 7 k-steps of 32 (more than its 4-stage ring), the last part-filled
                        conv(1, 9, 15, 24, 136, 3, 3, 1, 1, 1),
                        // grouped fp16 shapes for 10's tensor-core paths: T = 8 5x5 (streamed, a half-empty
                        // last k-step), T = 16 with four n8 tiles (resident), T = 64 1x3 stride 2 with
                        // three n8 tiles and two slabs, output tiles cut at the right and the bottom, and
                        // T = 32 stride 2 with 33 output columns (tiles of 2 rows: 8 would not fit twice)
                        conv(1, 7, 9, 16, 32, 5, 5, 1, 2, 2), conv(2, 6, 7, 32, 64, 3, 3, 1, 1, 2),
                        conv(1, 5, 9, 128, 48, 1, 3, 2, 0, 2), conv(1, 10, 37, 16, 16, 3, 3, 1, 1, 2),
                        conv(1, 17, 65, 64, 64, 3, 3, 2, 1, 2),
                        // depthwise, 33 half chunks: 32-lane blocks (one item per warp), two slabs, the
                        // last holding one chunk; odd P; and the same at stride 2
                        conv(1, 9, 7, 264, 264, 3, 3, 1, 1, 264), conv(1, 9, 7, 264, 264, 3, 3, 2, 1, 264)}) {
    p.dtype = DType::f16;
    t.push_back(p);
  }
  // The TMA-im2col wgmma rung's boundaries (gpu/conv2d/04c, 128 x 128 tiles,
  // 64-channel slots), each in f16 and bf16: C = 8 (one part-filled slot) with
  // stride 2 and odd K (scalar stores); C = 72 (two channel blocks, the last
  // 8 wide) with K = 130 (two column tiles) and M = 286 (three row tiles, the
  // last 30 rows); R != S with pad 2 (the bounding box's W and H corners
  // differ); stride 2 on a non-square image (different upper corners); stride 3
  // without padding; and 147 row tiles, more than one per SM of the persistent grid.
  for (DType dtype : {DType::f16, DType::bf16})
    for (ConvProblem p : {conv(3, 12, 10, 8, 17, 3, 3, 2, 1, 1), conv(2, 13, 11, 72, 130, 3, 3, 1, 1, 1),
                          conv(1, 11, 9, 16, 64, 5, 3, 1, 2, 1), conv(1, 10, 7, 32, 48, 3, 3, 2, 1, 1),
                          conv(2, 8, 13, 16, 16, 3, 3, 3, 0, 1), conv(6, 56, 56, 16, 24, 3, 3, 1, 1, 1)}) {
      p.dtype = dtype;
      t.push_back(p);
    }
  return t;
}

}  // namespace

std::vector<ConvProblem> OpTraits<ConvProblem>::shapes(ShapeTable table, Device device) {
  const bool gpu = device == Device::gpu;
  switch (table) {
    case ShapeTable::test: return test_shapes();
    case ShapeTable::tour:
      // The dense 3x3 first (lessons 01-05); then lesson 06's own shapes, same
      // C -> K: grouped T = 8, depthwise, pointwise. Each variant is toured on
      // the first of these it supports (app/common.hpp, tour_shape_for).
      if (gpu)
        return {conv(32, 56, 56, 128, 128, 3, 3, 1, 1, 1), conv(32, 56, 56, 128, 128, 3, 3, 1, 1, 16),
                conv(32, 56, 56, 128, 128, 3, 3, 1, 1, 128), conv(32, 56, 56, 128, 128, 1, 1, 1, 0, 1),
                conv(32, 56, 56, 128, 128, 3, 3, 1, 1, 1, DType::f16)};  // the tensor-core rungs'
      return {conv(1, 56, 56, 64, 64, 3, 3, 1, 1, 1), conv(1, 56, 56, 64, 64, 3, 3, 1, 1, 8),
              conv(1, 56, 56, 64, 64, 3, 3, 1, 1, 64), conv(1, 56, 56, 64, 64, 1, 1, 1, 0, 1)};
    case ShapeTable::bench:
      // Lesson 06's rows (depthwise, grouped T = 8 and 32, pointwise) sit beside a
      // dense 3x3 of the same C -> K, so a separable block can be compared with it.
      if (gpu)
        return {conv(32, 56, 56, 128, 128, 3, 3, 1, 1, 1), conv(128, 56, 56, 128, 128, 3, 3, 1, 1, 1),
                conv(128, 56, 56, 128, 128, 3, 3, 1, 1, 1, DType::f16),
                conv(128, 28, 28, 256, 256, 3, 3, 1, 1, 1),
                conv(128, 28, 28, 384, 384, 3, 3, 1, 1, 384, DType::f16),  // depthwise: memory bound
                conv(128, 28, 28, 384, 384, 3, 3, 1, 1, 384),
                conv(128, 28, 28, 256, 256, 3, 3, 1, 1, 256, DType::f16),  // depthwise half of a separable C=K=256
                conv(128, 28, 28, 256, 256, 3, 3, 1, 1, 32, DType::f16),   // grouped T = 8 (ConvFirst)
                conv(128, 28, 28, 256, 256, 3, 3, 1, 1, 32),
                conv(128, 28, 28, 256, 256, 3, 3, 1, 1, 8, DType::f16),    // grouped T = 32
                conv(128, 28, 28, 256, 256, 1, 1, 1, 0, 1, DType::f16),    // pointwise
                conv(128, 28, 28, 256, 256, 1, 1, 1, 0, 1),
                conv(128, 28, 28, 256, 256, 3, 3, 1, 1, 1, DType::f16)};   // dense, for the separable ratio
      return {conv(1, 56, 56, 64, 64, 3, 3, 1, 1, 1), conv(8, 56, 56, 64, 64, 3, 3, 1, 1, 1),
              conv(8, 28, 28, 128, 128, 3, 3, 1, 1, 1),
              conv(8, 28, 28, 128, 128, 3, 3, 1, 1, 128),  // depthwise
              conv(8, 28, 28, 128, 128, 3, 3, 1, 1, 16),   // grouped T = 8
              conv(8, 28, 28, 128, 128, 3, 3, 1, 1, 4),    // grouped T = 32
              conv(8, 28, 28, 128, 128, 1, 1, 1, 0, 1)};   // pointwise
  }
  return {};
}

std::string OpTraits<ConvProblem>::spec(const ConvProblem& p) {
  return "N=" + std::to_string(p.N) + ",H=" + std::to_string(p.H) + ",W=" + std::to_string(p.W) +
         ",C=" + std::to_string(p.C) + ",K=" + std::to_string(p.K) + ",R=" + std::to_string(p.R) +
         ",S=" + std::to_string(p.S) + ",stride=" + std::to_string(p.stride) + ",pad=" + std::to_string(p.pad) +
         ",groups=" + std::to_string(p.groups) + ",dtype=" + dtype_name(p.dtype);
}

std::string OpTraits<ConvProblem>::label(const ConvProblem& p) {
  return "n" + std::to_string(p.N) + "h" + std::to_string(p.H) + "w" + std::to_string(p.W) + "c" +
         std::to_string(p.C) + "_k" + std::to_string(p.K) + "r" + std::to_string(p.R) + "s" + std::to_string(p.S) +
         "_str" + std::to_string(p.stride) + "pad" + std::to_string(p.pad) + "g" + std::to_string(p.groups) + "_" +
         dtype_name(p.dtype);
}

namespace {
void validate(const ConvProblem& p) {
  if (!p.valid()) throw SpecError("invalid conv2d problem: " + p.invalid_reason());
}
}  // namespace

ConvProblem parse_conv_fields(const std::string& text, const std::string& op) {
  const KeyValues kv(text);
  kv.require_only({"N", "H", "W", "C", "K", "R", "S", "stride", "pad", "groups", "dtype"}, op);
  ConvProblem p;
  p.N = kv.get_int("N", 1);
  p.H = kv.get_int("H", 8);
  p.W = kv.get_int("W", p.H);
  p.C = kv.get_int("C", 8);
  p.K = kv.get_int("K", p.C);
  p.R = kv.get_int("R", 3);
  p.S = kv.get_int("S", p.R);
  p.stride = kv.get_int("stride", 1);
  p.pad = kv.get_int("pad", 0);
  p.groups = kv.get_int("groups", 1);
  p.dtype = parse_dtype(kv.get("dtype", "f32"));
  return p;
}

ConvProblem conv_from_x_w(const Shape& x, const Shape& w, DType dtype, const KeyValues& options) {
  if (w[3] <= 0 || x[3] % w[3] != 0)
    throw SpecError("w's last dimension (" + std::to_string(w[3]) + ") must divide x's channels (" +
                    std::to_string(x[3]) + "): it is C/groups");
  return {int(x[0]), int(x[1]), int(x[2]), int(x[3]), int(w[0]), int(w[1]), int(w[2]),
          options.get_int("stride", 1), options.get_int("pad", 0), int(x[3] / w[3]), dtype};
}

ConvProblem OpTraits<ConvProblem>::parse(const std::string& text) {
  const ConvProblem p = parse_conv_fields(text, "conv2d");
  validate(p);
  return p;
}

ConvProblem OpTraits<ConvProblem>::from_input_shapes(const std::vector<Shape>& shapes, DType dtype,
                                                     const KeyValues& options) {
  options.require_only({"stride", "pad"}, "conv2d with --in (shapes come from the files)");
  if (shapes.size() != 2 || shapes[0].size() != 4 || shapes[1].size() != 4)
    throw SpecError("conv2d takes two 4-d inputs: x [N,H,W,C] (NHWC) and w [K,R,S,C/groups] (KRSC)");
  const ConvProblem p = conv_from_x_w(shapes[0], shapes[1], dtype, options);
  validate(p);
  return p;
}

}  // namespace convlab
