#include "ops/conv_pool.hpp"

#include "ops/conv2d.hpp"

#include "reference/conv_pool.hpp"

namespace convlab {

template void register_op_handle<ConvPoolProblem>();

std::vector<TensorSpec> OpTraits<ConvPoolProblem>::inputs(const ConvPoolProblem& p) {
  return {{"x", {p.N, p.H, p.W, p.C}, p.dtype, "NHWC"},
          {"w", {p.K, p.R, p.S, p.conv().T()}, p.dtype, "KRSC"},
          {"scale", {p.K}, p.dtype, "per output channel"},
          {"bias", {p.K}, p.dtype, "per output channel"}};
}

std::vector<TensorSpec> OpTraits<ConvPoolProblem>::outputs(const ConvPoolProblem& p) {
  return {{"y", {p.N, p.P2(), p.Q2(), p.K}, p.dtype, "NHWC"}};
}

Args<ConvPoolProblem> OpTraits<ConvPoolProblem>::bind(std::vector<Tensor>& in, std::vector<Tensor>& out,
                                                       void* ws) {
  return {in.at(0).data(), in.at(1).data(), in.at(2).data(), in.at(3).data(), out.at(0).data(), ws};
}

void OpTraits<ConvPoolProblem>::reference(const ConvPoolProblem& p, const std::vector<std::vector<double>>& in,
                                          std::vector<std::vector<double>>& out) {
  ref::conv_bias_relu_pool(p.conv(), in.at(0).data(), in.at(1).data(), in.at(2).data(), in.at(3).data(),
                           out.at(0).data());
}

void OpTraits<ConvPoolProblem>::error_magnitude(const ConvPoolProblem& p, const std::vector<std::vector<double>>& in,
                                                std::vector<std::vector<double>>& magnitude) {
  ref::conv_bias_relu_pool_magnitude(p.conv(), in.at(0).data(), in.at(1).data(), in.at(2).data(), in.at(3).data(),
                                     magnitude.at(0).data());
}

namespace {

ConvPoolProblem layer(int N, int H, int W, int C, int K, int R, int S, int stride, int pad, int groups,
                      DType dtype = DType::f32) {
  return {N, H, W, C, K, R, S, stride, pad, groups, dtype};
}

// Correctness table. The pool adds its own edges to conv2d's: odd P and Q
// (the last conv row / column is dropped), a conv output of exactly 2x2, a
// GPU tile of 128 GEMM rows = 32 pooling windows crossed several times, K
// past one 128-wide channel tile.
std::vector<ConvPoolProblem> test_shapes() {
  std::vector<ConvPoolProblem> t = {
      layer(1, 2, 2, 1, 1, 1, 1, 1, 0, 1),      // the smallest: a 2x2 conv output, one window
      layer(2, 5, 7, 3, 5, 3, 3, 1, 1, 1),      // odd P = 5, Q = 7, tiny C and K
      layer(1, 9, 11, 17, 31, 3, 3, 1, 1, 1),   // primes, odd P and Q
      layer(3, 13, 9, 8, 12, 3, 3, 2, 1, 1),    // stride 2: P = 7, Q = 5
      layer(2, 10, 10, 16, 32, 1, 1, 1, 0, 1),  // pointwise, even
      layer(1, 17, 17, 33, 65, 3, 3, 2, 1, 1),  // stride 2, odd P = Q = 9, tile + 1 channels
      layer(2, 33, 31, 16, 24, 3, 3, 1, 1, 1),  // 480 windows: 15 GPU row tiles, odd Q
      layer(1, 12, 12, 16, 136, 3, 3, 1, 1, 1), // K = 136: two channel tiles of 128
      layer(1, 15, 15, 64, 63, 3, 3, 1, 1, 1),  // tile − 1 channels, odd P and Q
      layer(1, 11, 10, 24, 40, 3, 3, 1, 1, 2),  // grouped: T = 12, K/groups = 20
      layer(1, 16, 16, 64, 64, 3, 3, 1, 1, 1),  // a typical layer, tile-aligned
      layer(1, 6, 6, 8, 300, 3, 3, 1, 1, 1),    // K = 300: past the CPU's 256-wide channel tile
  };
  for (ConvPoolProblem p : {layer(2, 5, 7, 3, 5, 3, 3, 1, 1, 1), layer(1, 9, 11, 17, 31, 3, 3, 1, 1, 1),
                            layer(2, 33, 31, 16, 24, 3, 3, 1, 1, 1), layer(1, 12, 12, 16, 136, 3, 3, 1, 1, 1),
                            layer(3, 13, 9, 8, 12, 3, 3, 2, 1, 1), layer(1, 16, 16, 64, 64, 3, 3, 1, 1, 1),
                            layer(1, 11, 10, 24, 40, 3, 3, 1, 1, 2)}) {
    p.dtype = DType::f16;
    t.push_back(p);
  }
  return t;
}

}  // namespace

std::vector<ConvPoolProblem> OpTraits<ConvPoolProblem>::shapes(ShapeTable table, Device device) {
  const bool gpu = device == Device::gpu;
  switch (table) {
    case ShapeTable::test: return test_shapes();
    case ShapeTable::tour:
      return {gpu ? layer(64, 112, 112, 16, 128, 3, 3, 1, 1, 1, DType::f16) : layer(2, 112, 112, 16, 64, 3, 3, 1, 1, 1)};
    case ShapeTable::bench:
      if (gpu)
        return {layer(64, 112, 112, 16, 128, 3, 3, 1, 1, 1, DType::f16), layer(64, 112, 112, 16, 128, 3, 3, 1, 1, 1),
                layer(64, 112, 112, 64, 64, 1, 1, 1, 0, 1, DType::f16), layer(32, 56, 56, 128, 128, 3, 3, 1, 1, 1, DType::f16)};
      return {layer(2, 112, 112, 16, 64, 3, 3, 1, 1, 1)};
  }
  return {};
}

// The text forms are the conv's own (the pool has no parameters): same keys, same label.
std::string OpTraits<ConvPoolProblem>::spec(const ConvPoolProblem& p) { return OpTraits<ConvProblem>::spec(p.conv()); }

std::string OpTraits<ConvPoolProblem>::label(const ConvPoolProblem& p) {
  return OpTraits<ConvProblem>::label(p.conv());
}

namespace {
// The layer whose conv is c (the pool is fixed: 2x2, stride 2).
ConvPoolProblem with_pool(const ConvProblem& c) {
  return {c.N, c.H, c.W, c.C, c.K, c.R, c.S, c.stride, c.pad, c.groups, c.dtype};
}

void validate(const ConvPoolProblem& p) {
  if (!p.valid()) throw SpecError("invalid conv_bias_relu_pool problem: " + p.invalid_reason());
}
}  // namespace

ConvPoolProblem OpTraits<ConvPoolProblem>::parse(const std::string& text) {
  const ConvPoolProblem p = with_pool(parse_conv_fields(text, "conv_bias_relu_pool"));
  validate(p);
  return p;
}

ConvPoolProblem OpTraits<ConvPoolProblem>::from_input_shapes(const std::vector<Shape>& shapes, DType dtype,
                                                             const KeyValues& options) {
  options.require_only({"stride", "pad"}, "conv_bias_relu_pool with --in (shapes come from the files)");
  if (shapes.size() != 4 || shapes[0].size() != 4 || shapes[1].size() != 4 || shapes[2].size() != 1 ||
      shapes[3].size() != 1)
    throw SpecError("conv_bias_relu_pool takes x [N,H,W,C] (NHWC), w [K,R,S,C/groups] (KRSC), scale [K], bias [K]");
  const ConvPoolProblem p = with_pool(conv_from_x_w(shapes[0], shapes[1], dtype, options));
  validate(p);
  return p;
}

}  // namespace convlab
