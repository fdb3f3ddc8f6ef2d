#include "ops/mbconv.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "reference/blocks.hpp"

namespace convlab {

template void register_op_handle<MBConvProblem>();

// ---- the descriptor ----------------------------------------------------------------

int MBConvProblem::se_channels() const {
  if (!has_se()) return 0;
  return std::max(1, int(std::floor(double(C) * se)));
}

bool MBConvProblem::valid() const { return invalid_reason().empty(); }

std::string MBConvProblem::invalid_reason() const {
  if (N <= 0 || H <= 0 || W <= 0 || C <= 0 || C_out <= 0 || expand <= 0)
    return "N, H, W, C, C_out and e must be positive";
  if (kernel != 3 && kernel != 5) return "k (the depthwise kernel size) must be 3 or 5";
  if (stride != 1 && stride != 2) return "stride must be 1 or 2";
  if (!(se >= 0.0 && se <= 4.0)) return "se (the SE ratio) must be 0 (no SE) or in (0, 4]";
  if (activation != MBConvActivation::relu && activation != MBConvActivation::silu) return "act must be relu or silu";
  // hidden = e·C must be an int, and every tensor small enough to allocate.
  if (int64_t(expand) * C > (int64_t(1) << 30)) return "hidden = e*C is over 2^30";
  const double biggest = std::max({x_elems(), y_elems(), input_pixels() * hidden(), d_elems(), weight_elems()});
  if (biggest > double(1LL << 34)) return "a tensor of more than 2^34 elements";
  return "";
}

double MBConvProblem::layer_by_layer_bytes() const {
  const double b = dtype_size(dtype);
  double extra = 2 * e_elems()       // expand writes e, the depthwise reads it
                 + 2 * d_elems();    // depthwise writes d, the project (or the gate pass) reads it
  if (has_se())
    extra += d_elems()               // the pool reads d
             + 2 * d_elems()         // the gate pass writes d⊙g, the project reads it (d read above)
             + 4 * pooled_elems();   // means written and read, gates written and read
  if (has_residual()) extra += x_elems();  // the project's epilogue reads x again
  return min_bytes() + b * extra;
}

double MBConvProblem::two_pass_recompute_bytes() const {
  // Pass 2 reads x (all of it: it recomputes e and d) and the expand and
  // depthwise weights again; the per-image fp32 channel sums go out and back.
  const double b = dtype_size(dtype);
  return min_bytes() + b * (x_elems() + expand_weight_elems() + depthwise_weight_elems()) +
         (4.0 * 2 + b * 2) * pooled_elems();
}

double MBConvProblem::two_pass_store_bytes() const {
  // Pass 1 writes d in f16, pass 2 reads it back (and x for the residual only).
  const double b = dtype_size(dtype);
  return min_bytes() + 2.0 * 2 * d_elems() + (has_residual() ? b * x_elems() : 0.0) + (4.0 * 2 + b * 2) * pooled_elems();
}

double MBConvProblem::suite_layer_by_layer_bytes() const {
  // The GEMM and depthwise rungs write their raw outputs; a separate pass adds
  // the bias and applies φ (read + write); the residual is its own pass.
  const double b = dtype_size(dtype);
  double extra = 2 * e_elems() + 2 * e_elems()  // e written by the GEMM, bias+φ pass, read by the depthwise
                 + 2 * d_elems() + 2 * d_elems()  // d likewise, read by the project
                 + 2 * y_elems();                 // bias pass over y
  if (has_se()) extra += d_elems() + 2 * d_elems() + 4 * pooled_elems();
  if (has_residual()) extra += x_elems() + 2 * y_elems();
  return min_bytes() + b * extra;
}

// ---- plans -----------------------------------------------------------------------------

std::vector<MBConvPlan> mbconv_plans(const MBConvProblem& p, int tile_pixels) {
  const double b = dtype_size(p.dtype);
  const double x = p.x_elems(), y = p.y_elems(), e = p.e_elems(), d = p.d_elems(), pooled = p.pooled_elems();
  const double we = p.expand_weight_elems(), wd = p.depthwise_weight_elems(), ws = p.se_weight_elems(),
               wp = p.project_weight_elems();
  const double weights = p.weight_elems();
  const double res = p.has_residual() ? x : 0.0;
  // One tile: tile_pixels output pixels; its input footprint with the halo
  // (stride·rows + K − 1 input rows of a tile one output row high, at worst).
  const double tiles = std::ceil(p.output_pixels() / tile_pixels);
  const double tile_in = std::min(p.input_pixels(), tiles * (double(tile_pixels) * p.stride * p.stride +
                                                             double(p.kernel - 1) * (p.stride * tile_pixels + p.kernel - 1)));
  std::vector<MBConvPlan> plans;

  {
    MBConvPlan a{"layer_by_layer", "Fig. 7a", "one kernel per layer; e, d and d*g round-trip DRAM", {}, {}, 0};
    a.tensors = {{"x", Place::dram, x, p.has_residual() ? "read by the expand and again by the residual" : "read once"}};
    if (p.has_expand()) a.tensors.push_back({"e", Place::dram, e, "expanded tensor, written then read"});
    a.tensors.push_back({"d", Place::dram, d, p.has_se() ? "depthwise output: written, read by the pool and the gate"
                                                         : "depthwise output, written then read"});
    if (p.has_se()) {
      a.tensors.push_back({"m, g", Place::dram, 2 * pooled, "per-image channel means and gates"});
      a.tensors.push_back({"d*g", Place::dram, d, "gated tensor, written then read by the project"});
    }
    a.tensors.push_back({"y", Place::dram, y, "written once"});
    a.tensors.push_back({"weights", Place::dram, weights, "read once per layer"});
    if (p.has_expand()) a.kernels.push_back({"expand + be, φ", p.expand_macs(), b * (x + we + e)});
    a.kernels.push_back({"depthwise + bd, φ", p.depthwise_macs(), b * ((p.has_expand() ? e : x) + wd + d)});
    if (p.has_se()) {
      a.kernels.push_back({"global mean of d", 0, b * (d + pooled)});
      a.kernels.push_back({"SE FC, ψ, FC, sigmoid", p.se_macs(), b * (pooled + ws + pooled)});
      a.kernels.push_back({"d * g", 0, b * (d + pooled + d)});
    }
    a.kernels.push_back({p.has_residual() ? "project + bp + x" : "project + bp", p.project_macs(),
                         b * (d + wp + res + y)});
    a.global_bytes = a.dram_bytes();
    plans.push_back(a);
  }
  if (p.has_se()) {
    MBConvPlan r{"two_pass_recompute", "two passes",
                 "pass 1: expand + depthwise per tile on chip -> per-image channel sums; gate; pass 2: recompute "
                 "expand + depthwise, * g, project, + x, store y",
                 {}, {}, 0};
    r.tensors = {{"x", Place::dram, 2 * x, "read by both passes"},
                 {"e, d", Place::local, e + d, "per tile in shared memory/registers, made twice"},
                 {"sums", Place::dram, pooled, "fp32 per-image channel sums (L2-resident)"},
                 {"g", Place::dram, pooled, "gates from the sums"},
                 {"weights", Place::global, weights, "every CTA reads them from L2"},
                 {"y", Place::dram, y, "written once"}};
    r.kernels.push_back({"pass 1: expand + depthwise + sums", p.expand_macs() + p.depthwise_macs(),
                         b * (x + we + wd) + 4.0 * pooled});
    r.kernels.push_back({"SE gate", p.se_macs(), 4.0 * pooled + b * (ws + pooled)});
    r.kernels.push_back({"pass 2: recompute, gate, project, + x", p.expand_macs() + p.depthwise_macs() + p.project_macs(),
                         b * (x + we + wd + wp + pooled + y)});
    r.global_bytes = b * (2 * tile_in * p.C + 2 * tiles * weights + y) + 8.0 * pooled;
    plans.push_back(r);

    MBConvPlan s{"two_pass_store", "two passes",
                 "pass 1: expand + depthwise per tile, store d (f16), sums; gate; pass 2: read d, * g, project, + x, "
                 "store y",
                 {}, {}, 0};
    s.tensors = {{"x", Place::dram, x + res, p.has_residual() ? "pass 1, and pass 2 for the residual" : "pass 1 only"},
                 {"e", Place::local, e, "per tile, on chip"},
                 {"d", Place::dram, d, "written by pass 1 in f16, read by pass 2"},
                 {"sums", Place::dram, pooled, "fp32 per-image channel sums"},
                 {"g", Place::dram, pooled, "gates"},
                 {"weights", Place::global, weights, "every CTA reads them from L2"},
                 {"y", Place::dram, y, "written once"}};
    s.kernels.push_back({"pass 1: expand + depthwise, store d + sums", p.expand_macs() + p.depthwise_macs(),
                         b * (x + we + wd) + 2.0 * d + 4.0 * pooled});
    s.kernels.push_back({"SE gate", p.se_macs(), 4.0 * pooled + b * (ws + pooled)});
    s.kernels.push_back({"pass 2: read d, gate, project, + x", p.project_macs(), 2.0 * d + b * (wp + pooled + res + y)});
    s.global_bytes = b * (tile_in * p.C + 2 * tiles * weights + res + y) + 4.0 * d + 8.0 * pooled;
    plans.push_back(s);

    // One CTA per image (11f): only where one image's d fits one SM's shared memory.
    if (d / p.N * b <= kImageOnChipBytes) {
      MBConvPlan o{"one_kernel_per_image", "one pass",
                   "one kernel, one CTA per image: expand + depthwise chunk by chunk, the image's whole d kept on "
                   "chip, pooled, SE, d * g in place, project + x, store y",
                   {}, {}, 0};
      o.tensors = {{"x", Place::dram, x, "read once"},
                   {"e, d", Place::local, e + d, "the image's whole d in shared memory, e one chunk at a time"},
                   {"sums, g", Place::local, 2 * pooled, "per image, on chip"},
                   {"weights", Place::global, p.N * weights, "every CTA (image) reads them from L2"},
                   {"y", Place::dram, y, "written once"}};
      o.kernels.push_back({"mbconv block, one CTA per image", p.macs(), p.min_bytes()});
      o.global_bytes = b * (x + p.N * weights + y);
      plans.push_back(o);
    }

    // One image over a cluster of kImageCluster CTAs (11j): each CTA makes a band of output rows
    // from its input rows with the halo, the bands' SE partials meet in distributed shared memory.
    if (p.P() >= kImageCluster && d / p.N * b <= kImageCluster * kImageOnChipBytes) {
      double rows_in = 0;  // input rows the bands expand, halos counted in every band that reads them
      for (int k = 0, P = p.P(); k < kImageCluster; ++k) {
        const int first = k * (P / kImageCluster) + std::min(k, P % kImageCluster);
        const int rows = P / kImageCluster + (k < P % kImageCluster ? 1 : 0);
        const int top = std::max(0, first * p.stride - p.kernel / 2);
        const int bottom = std::min(p.H, (first + rows - 1) * p.stride - p.kernel / 2 + p.kernel);
        rows_in += bottom - top;
      }
      const double halo = x * (rows_in / p.H - 1.0);  // x's halo rows, read a second time (from L2)
      MBConvPlan c{"one_kernel_per_image_cluster", "one pass",
                   "one kernel, a cluster of " + std::to_string(kImageCluster) +
                       " CTAs per image, a band of output rows each: expand (halo rows twice) + depthwise chunk by "
                       "chunk, the band's d kept on chip; FC1's partial sums exchanged through distributed shared "
                       "memory; SE, d * g, project + x, store y",
                   {}, {}, 0};
      c.tensors = {{"x", Place::dram, x, "read once from DRAM; the halo rows again from L2"},
                   {"e, d", Place::local, e * (rows_in / p.H) + d,
                    "each band's d in its CTA's shared memory, e one chunk at a time"},
                   {"FC1 partials", Place::global, double(p.N) * kImageCluster * (kImageCluster - 1) * 8 * p.se_channels(),
                    "fp32: each CTA reads its peers' (8 warps' partial sums of Cr outputs) through DSMEM"},
                   {"weights", Place::global, kImageCluster * p.N * weights, "every CTA reads them from L2"},
                   {"y", Place::dram, y, "written once"}};
      c.kernels.push_back({"mbconv block, a cluster per image",
                           p.macs() + p.expand_macs() * (rows_in / p.H - 1.0), p.min_bytes()});
      c.global_bytes = b * (x + halo + kImageCluster * p.N * weights + y) + 4.0 * c.tensors[2].elems;
      plans.push_back(c);
    }
  } else {
    MBConvPlan f{"single_pass", "one pass",
                 "one kernel, per tile: expand + depthwise + project + x on chip, store y (no SE: nothing waits for "
                 "the whole image)",
                 {}, {}, 0};
    f.tensors = {{"x", Place::dram, x, "read once from DRAM; halo rows from L2"},
                 {"e, d", Place::local, e + d, "per tile, on chip"},
                 {"weights", Place::global, weights, "every CTA reads them from L2"},
                 {"y", Place::dram, y, "written once"}};
    f.kernels.push_back({"mbconv block", p.macs(), p.min_bytes()});
    f.global_bytes = b * (tile_in * p.C + tiles * weights + y);
    plans.push_back(f);
  }
  return plans;
}

// ---- tensors ------------------------------------------------------------------------------

std::vector<TensorSpec> OpTraits<MBConvProblem>::inputs(const MBConvProblem& p) {
  // Weights uniform(-s, s), s = sqrt(3 / fan-in): every layer keeps its
  // input's variance, so the residual, the gate and each bias all show in y.
  const auto fan = [](double fan_in) { return std::sqrt(3.0 / fan_in); };
  const int Hd = p.hidden(), Cr = p.se_channels(), K = p.kernel;
  std::vector<TensorSpec> in = {{"x", {p.N, p.H, p.W, p.C}, p.dtype, "NHWC", 1.0}};
  if (p.has_expand()) {
    in.push_back({"expand_w", {p.C, Hd}, p.dtype, "row-major Cxhidden", fan(p.C)});
    in.push_back({"expand_b", {Hd}, p.dtype, "hidden", 0.5});
  }
  in.push_back({"dw_w", {Hd, K, K, 1}, p.dtype, "KRSC depthwise", fan(K * K / 2.0)});
  in.push_back({"dw_b", {Hd}, p.dtype, "hidden", 0.5});
  if (p.has_se()) {
    in.push_back({"se1_w", {Hd, Cr}, p.dtype, "row-major hiddenxCr", fan(Hd / 4.0)});
    in.push_back({"se1_b", {Cr}, p.dtype, "Cr", 0.5});
    in.push_back({"se2_w", {Cr, Hd}, p.dtype, "row-major Crxhidden", fan(Cr)});
    in.push_back({"se2_b", {Hd}, p.dtype, "hidden", 0.5});
  }
  in.push_back({"project_w", {Hd, p.C_out}, p.dtype, "row-major hiddenxC_out", fan(Hd / 2.0)});
  in.push_back({"project_b", {p.C_out}, p.dtype, "C_out", 0.5});
  return in;
}

std::vector<TensorSpec> OpTraits<MBConvProblem>::outputs(const MBConvProblem& p) {
  return {{"y", {p.N, p.P(), p.Q(), p.C_out}, p.dtype, "NHWC"}};
}

Args<MBConvProblem> OpTraits<MBConvProblem>::bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* ws) {
  // 11: x, ew, eb, dw, db, s1w, s1b, s2w, s2b, pw, pb;  9: no ew, eb;  7: no SE;  5: neither.
  const std::size_t n = in.size();
  const bool expand = n == 11 || n == 7, se = n == 11 || n == 9;
  std::size_t i = 0;
  Args<MBConvProblem> a{};
  a.x = in.at(i++).data();
  if (expand) a.expand_w = in.at(i++).data(), a.expand_b = in.at(i++).data();
  a.dw_w = in.at(i++).data(), a.dw_b = in.at(i++).data();
  if (se) {
    a.se1_w = in.at(i++).data(), a.se1_b = in.at(i++).data();
    a.se2_w = in.at(i++).data(), a.se2_b = in.at(i++).data();
  }
  a.project_w = in.at(i++).data(), a.project_b = in.at(i++).data();
  a.y = out.at(0).data();
  a.workspace = ws;
  return a;
}

void OpTraits<MBConvProblem>::reference(const MBConvProblem& p, const std::vector<std::vector<double>>& in,
                                        std::vector<std::vector<double>>& out) {
  ref::MBConvShape s;
  s.N = p.N, s.H = p.H, s.W = p.W, s.in_channels = p.C, s.hidden_channels = p.hidden(), s.out_channels = p.C_out;
  s.stride = p.stride, s.kernel_size = p.kernel, s.se_channels = p.se_channels();
  s.activation = s.se_activation = p.activation;
  ref::MBConvWeights w;
  std::size_t i = 1;
  if (p.has_expand()) w.expand_w = in.at(i++).data(), w.expand_b = in.at(i++).data();
  w.depthwise_w = in.at(i++).data(), w.depthwise_b = in.at(i++).data();
  if (p.has_se()) {
    w.se_reduce_w = in.at(i++).data(), w.se_reduce_b = in.at(i++).data();
    w.se_expand_w = in.at(i++).data(), w.se_expand_b = in.at(i++).data();
  }
  w.project_w = in.at(i++).data(), w.project_b = in.at(i++).data();
  ref::mbconv_block(s, w, in.at(0).data(), out.at(0).data());
}

// ---- shape tables ---------------------------------------------------------------------------

namespace {

using enum DType;
constexpr MBConvActivation relu = MBConvActivation::relu, silu = MBConvActivation::silu;

MBConvProblem block(int N, int H, int W, int C, int e, int k, int stride, double se, int C_out, MBConvActivation act,
                    DType dtype) {
  MBConvProblem p;
  p.N = N, p.H = H, p.W = W, p.C = C, p.expand = e, p.kernel = k, p.stride = stride, p.se = se, p.C_out = C_out;
  p.activation = act, p.dtype = dtype;
  return p;
}

// Correctness table, seconds on 2 cores. Odd and prime H, W (1, 3, 7, 13,
// 29: a 64-pixel tile ± a row); C and C_out not multiples of 8 (3, 5, 12,
// 20); e = 1 (no expand); k = 5; stride 2 at odd sizes; batch 1 and odd
// batches (the SE pools each image alone); images spanning several tiles;
// SE off (se = 0) for the single-pass plan.
std::vector<MBConvProblem> test_shapes() {
  return {
      // f32: the CPU rungs and the GPU layer-by-layer rung
      block(1, 1, 1, 8, 6, 3, 1, 0.25, 8, silu, f32),
      block(3, 7, 13, 16, 6, 3, 1, 0.25, 16, silu, f32),
      block(2, 13, 7, 5, 4, 5, 1, 0.25, 5, relu, f32),    // C = 5, Cr = 1, k = 5
      block(1, 29, 3, 24, 6, 3, 2, 0.25, 40, silu, f32),  // stride 2, odd rows
      block(2, 9, 11, 32, 1, 3, 1, 0.25, 16, silu, f32),  // e = 1, no residual
      block(1, 13, 13, 12, 3, 5, 2, 0.5, 20, silu, f32),  // k = 5, stride 2, odd
      block(3, 3, 2, 16, 6, 5, 1, 0.25, 16, relu, f32),   // k = 5 wider than the image
      block(1, 7, 7, 3, 2, 3, 2, 0.25, 3, silu, f32),     // stride 2, identity shape but no residual
      block(2, 7, 9, 16, 6, 3, 1, 0.0, 16, silu, f32),    // no SE
      block(1, 13, 7, 20, 1, 5, 2, 0.0, 12, relu, f32),   // no SE, no expand, k = 5, stride 2
      // N >= 8: on 2 threads the fused CPU rung hands out whole images (its row ring carried across bands)
      block(9, 11, 13, 7, 6, 3, 1, 0.25, 7, silu, f32),   // hidden 42 (pad channels), W = 2·6 + 1, C_out 7
      block(8, 10, 9, 6, 4, 5, 2, 0.5, 12, relu, f32),    // hidden 24 (a last 8-channel panel), k = 5, stride 2
      // f16 and bf16: the GPU rungs
      block(1, 1, 1, 16, 6, 3, 1, 0.25, 16, silu, f16),
      block(3, 7, 13, 24, 6, 3, 1, 0.25, 24, silu, f16),
      block(2, 29, 29, 16, 6, 3, 1, 0.25, 16, silu, f16),  // several tiles per image
      block(1, 13, 13, 40, 6, 5, 2, 0.25, 80, silu, f16),  // k = 5, stride 2, odd
      block(2, 15, 9, 32, 1, 3, 1, 0.25, 16, silu, f16),   // e = 1 (EfficientNet's first block)
      block(1, 7, 7, 20, 4, 5, 1, 0.25, 12, relu, f16),    // C, C_out not multiples of 8
      block(2, 14, 14, 24, 6, 3, 1, 0.0, 24, silu, f16),   // no SE: the single pass
      block(1, 9, 7, 16, 6, 5, 2, 0.0, 24, relu, f16),     // no SE, k = 5, stride 2
      block(2, 13, 11, 24, 6, 3, 1, 0.25, 24, silu, bf16),
      block(150, 1, 1, 32, 6, 3, 1, 0.25, 32, silu, f16),  // 150 one-pixel tiles: uneven splits of 6 chunks, 4 column groups
      // the fused kernel's pipeline: 2 chunks (hidden 48); e = 1 with 3 and 5 chunks (E copied three
      // buffers deep, the last chunk 8 wide), with and without SE
      block(2, 5, 6, 8, 6, 3, 1, 0.25, 8, silu, f16),
      block(1, 9, 10, 72, 1, 3, 1, 0.25, 72, silu, f16),
      block(1, 9, 10, 136, 1, 5, 2, 0.0, 24, relu, bf16),
      // e = 1 with fewer chunks than E buffers (one E buffer per chunk): one chunk, several tiles per
      // image; two chunks with the residual
      block(2, 45, 40, 32, 1, 3, 1, 0.25, 16, silu, f16),
      block(1, 37, 30, 48, 1, 5, 1, 0.25, 48, silu, bf16),
      // k = 5 at stride 2 on a wide image: a two-CTA tile would be one output row reading five, so
      // choose_tile takes the tallest one-CTA tile (6 rows; 5 in the single pass), the last one short
      block(2, 57, 57, 24, 6, 5, 2, 0.25, 40, silu, f16),
      block(1, 57, 57, 24, 6, 5, 2, 0.0, 40, relu, bf16),
      // 11c's pass 2, a GEMM over the batch's pixels: column blocks, Wp re-laid in 16-byte rows, a chunk
      // narrower than 8 channels with the residual at odd C
      block(3, 5, 5, 24, 2, 3, 1, 0.25, 136, silu, f16),  // C_out 136: three 64-column blocks
      block(2, 3, 3, 16, 2, 3, 1, 0.25, 67, relu, bf16),  // C_out odd: one-element stores
      block(3, 6, 5, 7, 3, 3, 1, 0.25, 7, silu, f16),     // hidden 21 (dbuf_live 24), C = C_out = 7 with the residual
      // the fused kernel's tiles of several whole images (images_for, at an H200's 264 resident CTAs):
      // batches large enough to keep two waves, N not a multiple of the images per tile (a short last
      // group), k = 3 and 5, stride 1 and 2, no expand, C not a multiple of 8, no SE; each ≤ 105 MFLOP
      block(1101, 3, 3, 16, 6, 3, 1, 0.25, 16, silu, f16),  // sums/store 6 images a tile, project 2
      block(1101, 3, 3, 8, 6, 5, 1, 0.0, 8, relu, f16),     // no SE: the single pass, 2 images; k = 5 wider than the image
      block(401, 7, 7, 16, 6, 3, 2, 0.25, 24, silu, f16),   // stride 2, 2 images
      block(401, 5, 5, 16, 6, 5, 2, 0.25, 16, silu, bf16),  // k = 5, stride 2
      block(541, 7, 7, 8, 6, 5, 1, 0.25, 8, silu, f16),     // k = 5, 7 × 7, hidden 48 (a last chunk of 16)
      block(401, 5, 5, 96, 1, 3, 1, 0.25, 24, silu, f16),   // e = 1: E copied from x
      block(401, 3, 3, 20, 4, 3, 1, 0.25, 12, relu, f16),   // C, C_out not multiples of 8: the plain copies
      block(1, 5, 5, 16, 6, 3, 1, 0.25, 16, silu, f16),     // N = 1: one image, hidden chunks split
      // E padded with zero rows (the store plan's kPadRows): a kernel per rows an item makes, each
      // with an image's last group short by one or two rows (computed from zero rows, not stored)
      block(1, 17, 11, 24, 6, 3, 1, 0.25, 24, silu, f16),   // k = 3: items of 3 rows, the last of 2
      block(1, 33, 9, 16, 6, 3, 2, 0.25, 24, relu, bf16),   // stride 2: items of 2 rows, the last of 1
      // pass 2's stream with more row tiles than warps: 6 728 against 3 168 in a wave (132 SMs ×
      // three CTAs × 8 warps), so a warp makes two or three tasks; 86 MFLOP
      block(128, 29, 29, 8, 2, 3, 1, 0.25, 8, silu, f16),
      // 11f, one CTA per image: 6 chunks of 64 with a short last one (hidden 328); project grids of
      // several blocks (gpu/lib/mbconv_image_layout.hpp at 16 warps): three along C_out (169 pixels,
      // C_out 136), two along the pixels (529 pixels)
      block(3, 7, 7, 82, 4, 3, 1, 0.25, 82, silu, f16),
      block(2, 5, 5, 16, 2, 3, 1, 0.25, 264, silu, f16),
      block(1, 13, 13, 24, 2, 5, 1, 0.5, 136, relu, bf16),
      block(2, 7, 7, 64, 6, 3, 1, 0.25, 64, silu, f16),  // 6 chunks with Cr = 16: the SE's 16-byte path
      block(1, 23, 23, 8, 2, 3, 1, 0.25, 8, silu, f16),
      // 11g, one CTA per image on wgmma: 64 input pixels (a full m64 tile) at stride 1 and 2 with two
      // chunks (the last 32 wide) and one; C padded to 64 in x's panel; x in four 64-column panels
      // (C = 200) with hidden 400 (7 chunks, the last 16 wide, odd chunk count for the E slots) and
      // C_out in four blocks; C_out 320 (five n64 blocks: warpgroups 0 and 1 take two)
      block(2, 8, 8, 16, 6, 3, 1, 0.25, 16, silu, f16),
      block(3, 8, 8, 24, 2, 5, 2, 0.0, 40, relu, bf16),
      block(2, 7, 7, 200, 2, 3, 1, 0.25, 200, silu, bf16),
      block(2, 7, 7, 64, 6, 3, 1, 0.25, 320, silu, f16),
      // 11g's SE: FC1 inside the chunk loop up to Cr = 64 (two outputs a lane; here exactly 64, odd
      // Cr 5 above takes the element loads), after the loop past it (Cr 68)
      block(1, 6, 6, 128, 3, 5, 2, 0.5, 24, relu, bf16),
      block(2, 7, 7, 136, 2, 3, 1, 0.5, 64, silu, f16),
      // 11g's depthwise walks output rows in segments of 8 pixels: rows of four segments (Q = 29, the
      // last 5 wide), and of two at stride 2 with k = 5 (Q = 11)
      block(2, 2, 29, 24, 6, 3, 1, 0.25, 24, silu, f16),
      block(1, 3, 21, 16, 6, 5, 2, 0.25, 24, relu, bf16),
      // 11j, an image over a cluster of two by bands of output rows: EfficientNet's C = 80 block
      // (8 chunks, bands of 7 rows expanding 8); an odd row count (bands of 7 and 6, the first
      // expanding 81 pixels: two m64 tiles, the other 72) at k = 5; stride 2 (bands of 4 output
      // rows from 8 input rows each); exactly 128 input pixels a band (8 rows of 16); K = 5 at C = 80
      // (126 input pixels a band, one E slot)
      block(2, 14, 14, 80, 6, 3, 1, 0.25, 80, silu, f16),
      block(1, 14, 14, 80, 6, 5, 1, 0.25, 112, silu, f16),
      block(3, 13, 9, 24, 6, 5, 1, 0.25, 24, relu, bf16),
      block(2, 15, 9, 16, 6, 3, 2, 0.25, 24, silu, f16),
      block(1, 14, 16, 32, 4, 3, 1, 0.25, 40, silu, f16),
      // Wp past 113 KB: 11e's pass 2 is the persistent GEMM here; 11c's stream with one part of
      // Wp a CTA (kStreamCtaPart) takes the first two (the shapes 7 × 7 × 200 and 64 → 320 above
      // too): C = 112 at 7² (hidden 672, 3 parts of 5 n8 tiles, 147 rows: a short last row tile,
      // the residual); hidden 1152 at odd C_out 95 (a part of 6 n8 tiles is 126 KB: 3 parts of 4);
      // hidden 7296 (228 chunks), where not even one n8 tile a part fits: the persistent GEMM in
      // that form too
      block(3, 7, 7, 112, 6, 3, 1, 0.25, 112, silu, f16),
      block(3, 5, 5, 192, 6, 3, 1, 0.25, 95, silu, bf16),
      block(1, 3, 3, 32, 228, 3, 1, 0.25, 16, silu, f16),
  };
}

}  // namespace

std::vector<MBConvProblem> OpTraits<MBConvProblem>::shapes(ShapeTable table, Device device) {
  const bool gpu = device == Device::gpu;
  switch (table) {
    case ShapeTable::test: return test_shapes();
    case ShapeTable::tour:
      return {gpu ? block(128, 56, 56, 24, 6, 3, 1, 0.25, 24, silu, f16)
                  : block(2, 28, 28, 24, 6, 3, 1, 0.25, 24, silu, f32)};
    case ShapeTable::bench:
      if (gpu)  // the goal shapes: N = 128, f16, e = 6, k = 3, SE 0.25, stride 1, SiLU; one without SE;
                // then EfficientNet-B0's other distinct MBConv blocks (torchvision's table: e=1, k=5, stride 2)
        return {block(128, 56, 56, 24, 6, 3, 1, 0.25, 24, silu, f16), block(128, 28, 28, 40, 6, 3, 1, 0.25, 40, silu, f16),
                block(128, 14, 14, 80, 6, 3, 1, 0.25, 80, silu, f16), block(128, 14, 14, 112, 6, 3, 1, 0.25, 112, silu, f16),
                block(128, 7, 7, 192, 6, 3, 1, 0.25, 192, silu, f16), block(128, 56, 56, 24, 6, 3, 1, 0.0, 24, silu, f16),
                block(128, 112, 112, 32, 1, 3, 1, 0.25, 16, silu, f16),   // stage 1: MBConv1
                block(128, 112, 112, 16, 6, 3, 2, 0.25, 24, silu, f16),   // stage 2, first block
                block(128, 56, 56, 24, 6, 5, 2, 0.25, 40, silu, f16),     // stage 3
                block(128, 28, 28, 40, 6, 5, 1, 0.25, 40, silu, f16),
                block(128, 28, 28, 40, 6, 3, 2, 0.25, 80, silu, f16),     // stage 4
                block(128, 14, 14, 80, 6, 5, 1, 0.25, 112, silu, f16),    // stage 5
                block(128, 14, 14, 112, 6, 5, 1, 0.25, 112, silu, f16),
                block(128, 14, 14, 112, 6, 5, 2, 0.25, 192, silu, f16),   // stage 6
                block(128, 7, 7, 192, 6, 5, 1, 0.25, 192, silu, f16),
                block(128, 7, 7, 192, 6, 3, 1, 0.25, 320, silu, f16)};    // stage 7
      // The expanded tensor is N·56·56·144 floats: 14.5 MB at N = 8 (e and d together fit a 32 MiB L3),
      // 57.8 MB at N = 32 (well past L2 + L3 of the 2-core EPYC machine, 2 × 1 MiB + 32 MiB).
      return {block(8, 56, 56, 24, 6, 3, 1, 0.25, 24, silu, f32), block(32, 56, 56, 24, 6, 3, 1, 0.25, 24, silu, f32)};
  }
  return {};
}

namespace {

std::string ratio_text(double r) {  // shortest text that reads back to the same double
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, r);
  return std::string(buf, res.ptr);
}

MBConvActivation parse_activation(const std::string& s) {
  for (MBConvActivation a : {relu, silu})
    if (s == ref::activation_name(a)) return a;
  throw SpecError("unknown activation '" + s + "' for mbconv (expected relu or silu)");
}

double parse_ratio(const std::string& s) {
  double r = 0;
  const auto res = std::from_chars(s.data(), s.data() + s.size(), r);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size() || !std::isfinite(r))
    throw SpecError("invalid mbconv problem: se must be a number (the SE ratio, e.g. 0.25, or 0 for none), got '" + s +
                    "'");
  return r;
}

void validate(const MBConvProblem& p) {
  const std::string why = p.invalid_reason();
  if (!why.empty()) throw SpecError("invalid mbconv problem: " + why);
}

}  // namespace

std::string OpTraits<MBConvProblem>::spec(const MBConvProblem& p) {
  std::string s = "N=" + std::to_string(p.N);
  s += ",H=" + std::to_string(p.H) + ",W=" + std::to_string(p.W) + ",C=" + std::to_string(p.C);
  s += ",e=" + std::to_string(p.expand) + ",k=" + std::to_string(p.kernel) + ",stride=" + std::to_string(p.stride);
  s += ",se=" + ratio_text(p.se) + ",C_out=" + std::to_string(p.C_out);
  s += std::string(",act=") + ref::activation_name(p.activation) + ",dtype=" + dtype_name(p.dtype);
  return s;
}

std::string OpTraits<MBConvProblem>::label(const MBConvProblem& p) {
  std::string s = "n" + std::to_string(p.N);
  s += "_" + std::to_string(p.H) + "x" + std::to_string(p.W) + "_c" + std::to_string(p.C);
  s += "_e" + std::to_string(p.expand) + "_k" + std::to_string(p.kernel) + "_s" + std::to_string(p.stride);
  s += "_se" + std::to_string(int(std::lround(p.se * 100))) + "_co" + std::to_string(p.C_out);
  s += std::string("_") + ref::activation_name(p.activation) + "_" + dtype_name(p.dtype);
  return s;
}

MBConvProblem OpTraits<MBConvProblem>::parse(const std::string& text) {
  const KeyValues kv(text);
  kv.require_only({"N", "H", "W", "C", "e", "k", "stride", "se", "C_out", "act", "dtype"}, "mbconv");
  MBConvProblem p;
  p.N = kv.get_int("N", 1);
  p.H = kv.get_int("H", 8);
  p.W = kv.get_int("W", p.H);
  p.C = kv.get_int("C", 16);
  p.expand = kv.get_int("e", 6);
  p.kernel = kv.get_int("k", 3);
  p.stride = kv.get_int("stride", 1);
  p.se = parse_ratio(kv.get("se", "0.25"));
  p.C_out = kv.get_int("C_out", p.C);
  p.activation = parse_activation(kv.get("act", "silu"));
  p.dtype = parse_dtype(kv.get("dtype", "f32"));
  validate(p);
  return p;
}

MBConvProblem OpTraits<MBConvProblem>::from_input_shapes(const std::vector<Shape>& s, DType dtype,
                                                         const KeyValues& options) {
  options.require_only({"stride", "act"}, "mbconv with --in (shapes come from the files)");
  const std::size_t n = s.size();
  const bool expand = n == 11 || n == 7, se = n == 11 || n == 9;
  const char* usage =
      "mbconv takes x [N,H,W,C], expand_w [C,hidden], expand_b [hidden] (left out when e = 1), dw_w [hidden,k,k,1], "
      "dw_b [hidden], se1_w [hidden,Cr], se1_b [Cr], se2_w [Cr,hidden], se2_b [hidden] (the four left out without "
      "SE), project_w [hidden,C_out], project_b [C_out]: 11, 9, 7 or 5 files";
  if (n != 5 && n != 7 && n != 9 && n != 11) throw SpecError(usage);
  std::size_t i = 0;
  const auto next = [&](std::size_t rank) -> const Shape& {
    const Shape& sh = s.at(i++);
    if (sh.size() != rank) throw SpecError(usage);
    return sh;
  };
  const Shape& x = next(4);
  MBConvProblem p;
  p.N = int(x[0]), p.H = int(x[1]), p.W = int(x[2]), p.C = int(x[3]);
  int hidden = p.C;
  if (expand) {
    hidden = int(next(2)[1]);
    next(1);
  }
  const Shape& dw = next(4);
  p.kernel = int(dw[1]);
  next(1);
  int cr = 0;
  if (se) {
    cr = int(next(2)[1]);
    next(1), next(2), next(1);
  }
  p.C_out = int(next(2)[1]);
  next(1);
  if (p.C <= 0 || hidden % p.C != 0)
    throw SpecError("mbconv: hidden (" + std::to_string(hidden) + ", expand_w's columns) must be a multiple e*C of C (" +
                    std::to_string(p.C) + ")");
  p.expand = hidden / p.C;
  if (expand && p.expand == 1)
    throw SpecError("mbconv: expand_w makes hidden == C (e = 1), which has no expand layer: leave expand_w and expand_b out");
  if (se) {
    if (cr <= 0 || cr > p.C)
      throw SpecError("mbconv: the SE width Cr (se1_w's columns, " + std::to_string(cr) + ") must be in 1..C");
    p.se = (cr + 0.5) / p.C;  // floor(C·se) == Cr
  } else {
    p.se = 0.0;
  }
  p.stride = options.get_int("stride", 1);
  p.activation = parse_activation(options.get("act", "silu"));
  p.dtype = dtype;
  validate(p);
  if (p.se_channels() != cr) throw SpecError("mbconv: internal: the SE width does not round-trip");
  // The remaining dimensions are checked against inputs() by the harness, with a message naming the tensor.
  return p;
}

}  // namespace convlab
