#include "ops/convfirst.hpp"

#include <cmath>

#include "reference/blocks.hpp"

namespace convlab {

template void register_op_handle<ConvFirstProblem>();

// ---- the descriptor ----------------------------------------------------------------

bool ConvFirstProblem::valid() const { return invalid_reason().empty(); }

std::string ConvFirstProblem::invalid_reason() const {
  if (N <= 0 || H <= 0 || W <= 0 || C <= 0 || hidden <= 0 || C_out <= 0 || group_width <= 0)
    return "N, H, W, C, hidden, C_out and gw must be positive";
  if (stride != 1 && stride != 2) return "stride must be 1 or 2";
  if (C % group_width != 0) return "the group width gw must divide C";
  if (stride == 1 && C_out != C) return "the stride-1 block has an identity shortcut: C_out must equal C";
  if (activation != ConvFirstActivation::relu && activation != ConvFirstActivation::silu)
    return "act must be relu or silu";
  // Every index of every tensor must fit the 32-bit ints the kernels' loops use per dimension,
  // and the whole tensors the 64-bit byte offsets: refuse sizes whose allocation would be absurd.
  const double biggest = std::max({x_elems(), y_elems(), hidden_elems(), weight_elems()});
  if (biggest > double(1LL << 34)) return "a tensor of more than 2^34 elements";
  return "";
}

double ConvFirstProblem::layer_by_layer_bytes() const {
  const double e = dtype_size(dtype);
  if (stride == 1)  // + t written and read, h written and read, x read again by the residual
    return min_bytes() + e * (2 * t_elems() + 2 * hidden_elems() + x_elems());
  const double tp = output_pixels() * C;  // t' and s: [N, P, Q, C]
  // conv writes t; blur reads t, writes t'; expand reads t'; shortcut blur reads x again, writes s; project reads s.
  return min_bytes() + e * (2 * t_elems() + 2 * tp + 2 * hidden_elems() + x_elems() + 2 * tp);
}

double ConvFirstProblem::suite_layer_by_layer_bytes() const {
  const double e = dtype_size(dtype);
  const double pix = output_pixels();
  // conv (x in, t out) + bias pass over t (read, write)
  double bytes = e * (x_elems() + double(C) * 9 * group_width + 3 * t_elems() + C);
  if (stride == 2) bytes += e * (t_elems() + pix * C);  // blur t -> t'
  // FFN on t' (or t) into y: H written, read+written by bias+φ, read; z written (into y) and its bias pass.
  bytes += e * (pix * C + double(C) * hidden + hidden + double(hidden) * C_out + C_out + 4 * hidden_elems() +
                3 * y_elems());
  if (stride == 1) return bytes + e * 3 * y_elems();  // residual pass: read y and x, write y
  bytes += e * (x_elems() + pix * C);                  // blur x -> s
  if (has_projection()) bytes += e * (pix * C + double(C) * C_out + C_out + y_elems());  // s·Wsc -> sc
  return bytes + e * 3 * y_elems();  // y += s (or sc + bsc)
}

// ---- plans -----------------------------------------------------------------------------

const char* place_name(Place p) {
  switch (p) {
    case Place::dram: return "DRAM";
    case Place::global: return "global (L2/DSMEM)";
    case Place::local: return "local (smem/regs)";
  }
  return "?";
}

double ConvFirstPlan::macs() const {
  double m = 0;
  for (const PlanKernel& k : kernels) m += k.macs;
  return m;
}
double ConvFirstPlan::dram_bytes() const {
  double b = 0;
  for (const PlanKernel& k : kernels) b += k.dram_bytes;
  return b;
}

std::vector<ConvFirstPlan> convfirst_plans(const ConvFirstProblem& p, int tile_pixels, int split) {
  const double e = dtype_size(p.dtype);
  const double x = p.x_elems(), y = p.y_elems(), t = p.t_elems(), h = p.hidden_elems();
  const double pix = p.output_pixels(), tp = pix * p.C;
  const double wconv = double(p.C) * 9 * p.group_width + p.C, wu = double(p.C) * p.hidden + p.hidden,
               wv = double(p.hidden) * p.C_out + p.C_out,
               wsc = p.has_projection() ? double(p.C) * p.C_out + p.C_out : 0.0;
  const double weights = p.weight_elems();
  std::vector<ConvFirstPlan> plans;

  // (a) layer by layer: every layer a kernel, every activation in DRAM.
  {
    ConvFirstPlan a{"layer_by_layer", "Fig. 7a", "one kernel per layer; t and the hidden tensor h round-trip DRAM", {}, {}, 0};
    a.tensors = {{"x", Place::dram, x, "read by the conv and again by the shortcut"},
                 {"t", Place::dram, t, "grouped conv output, written then read"},
                 {"h", Place::dram, h, "hidden tensor φ(t·U + a), written then read"},
                 {"y", Place::dram, y, "written once"},
                 {"weights", Place::dram, weights, "read once per layer"}};
    a.kernels.push_back({"gconv3x3 + bias", p.conv_macs(), e * (x + wconv + t)});
    double ffn_in = t;
    if (p.stride == 2) {
      a.tensors.push_back({"t'", Place::dram, tp, "blurred conv output"});
      a.tensors.push_back({"s", Place::dram, tp, "blurred shortcut"});
      a.kernels.push_back({"blurpool(t)", 0, e * (t + tp)});
      a.kernels.push_back({"blurpool(x)", 0, e * (x + tp)});
      ffn_in = tp;
    }
    a.kernels.push_back({"expand + a, φ", pix * double(p.C) * p.hidden, e * (ffn_in + wu + h)});
    const double shortcut_in = p.stride == 1 ? x : tp;
    a.kernels.push_back({p.has_projection() ? "project + b + s·Wsc + bsc" : "project + b + shortcut",
                         pix * double(p.hidden) * p.C_out + p.shortcut_macs(), e * (h + wv + wsc + shortcut_in + y)});
    a.global_bytes = a.dram_bytes();  // every DRAM byte also crosses L2
    plans.push_back(a);
  }

  // (b) fused: one kernel, per CTA a tile of output pixels; t and h local.
  const double tiles = std::ceil(pix / tile_pixels);
  const double halo_pixels = double(tile_pixels) * p.stride * p.stride + 2.0 * p.W + 2.0 * p.W / tile_pixels * p.W;
  {
    ConvFirstPlan b{"fused", "Fig. 7b",
                    "one kernel; per CTA: input tile + halo -> gconv into local t -> Z = shortcut + b -> "
                    "for hidden chunks r: Z += φ(t·U_r + a_r)·V_r -> store y",
                    {}, {}, 0};
    b.tensors = {{"x", Place::dram, x, "read once from DRAM; halo rows re-read from L2 by the neighbouring tile"},
                 {"weights", Place::global, weights, "read once from DRAM, then by every CTA from L2"},
                 {"t", Place::local, t, "conv output tile in shared memory"},
                 {"h", Place::local, h, "one hidden chunk at a time, in registers"},
                 {"Z", Place::local, y, "output accumulators in registers, start from the shortcut + b"},
                 {"y", Place::dram, y, "written once"}};
    b.kernels.push_back({"convfirst block", p.macs(), p.min_bytes()});
    b.global_bytes = e * (tiles * weights + tiles * std::min(halo_pixels, p.input_pixels()) * p.C + y);
    b.ctas = tiles;
    plans.push_back(b);
  }

  // (c) large-C (10e_fused_cluster): each tile shared by the `split` CTAs of a
  // cluster. CTA k convolves its C/split channel groups (the grouped conv needs
  // no other channels) and writes that slice of t into every CTA's shared
  // memory; each CTA then makes 1/split of every hidden chunk's columns over all
  // C channels (no partial sums) and writes its slice of h to every
  // other CTA; each makes C_out/split output channels. What crosses between
  // CTAs (distributed shared memory) is t and h, each (split − 1) times.
  {
    ConvFirstPlan c{"large_c", "Fig. 7c",
                    "fused, a tile shared by " + std::to_string(split) +
                        " CTAs of a cluster; t and h slices exchanged through DSMEM",
                    {}, {}, 0};
    c.tensors = {{"x", Place::dram, x, "each CTA the halo rows of its channel groups"},
                 {"weights", Place::global, weights, "each CTA U's columns of its hidden slices, V's of its outputs"},
                 {"t", Place::local, t, "each CTA convolves its channel groups, writes them to every CTA"},
                 {"t exchange", Place::global, t * (split - 1), "t slices to the other CTAs (DSMEM)"},
                 {"h", Place::local, h, "each CTA its slice of a chunk's columns, over all channels"},
                 {"h exchange", Place::global, h * (split - 1), "h slices to the other CTAs (DSMEM), in the block's type"},
                 {"y", Place::dram, y, "each CTA its output channels"}};
    c.kernels.push_back({"convfirst block (cluster)", p.macs(), p.min_bytes()});
    c.global_bytes = e * (tiles * weights + tiles * std::min(halo_pixels, p.input_pixels()) * p.C + y) +
                     e * (split - 1) * (t + h);
    c.ctas = tiles * split;
    plans.push_back(c);
  }

  // (d) large-C cut by hidden column (10g_fused_cluster_split_hidden): the same
  // tile, conv and t exchange, but each CTA makes 1/split of every hidden chunk's
  // columns and projects them into a partial Z of ALL C_out channels; h never
  // leaves its CTA. At the end of a tile each CTA sends the other CTAs' channels of
  // its partial Z (fp32) and adds what it receives: (split − 1)·pix·C_out fp32
  // elements cross, once per tile, where (c) sends h in the block's type every chunk.
  {
    ConvFirstPlan d{"large_c_hidden", "Fig. 7c",
                    "fused, a tile shared by " + std::to_string(split) +
                        " CTAs of a cluster cut by hidden column; t slices and partial sums of Z exchanged through "
                        "DSMEM",
                    {}, {}, 0};
    d.tensors = {{"x", Place::dram, x, "each CTA the halo rows of its channel groups"},
                 {"weights", Place::global, weights, "each CTA U's columns and V's rows of its hidden slices"},
                 {"t", Place::local, t, "each CTA convolves its channel groups, writes them to every CTA"},
                 {"t exchange", Place::global, t * (split - 1), "t slices to the other CTAs (DSMEM)"},
                 {"h", Place::local, h, "each CTA its slice of a chunk's columns; never leaves the CTA"},
                 {"Z", Place::local, y * split, "each CTA a partial sum of all output channels, fp32 registers"},
                 {"Z exchange", Place::global, y * (split - 1) * 4.0 / e,
                  "the other CTAs' channels of each partial Z, fp32, once per tile (DSMEM)"},
                 {"y", Place::dram, y, "each CTA its output channels"}};
    d.kernels.push_back({"convfirst block (cluster, by hidden)", p.macs(), p.min_bytes()});
    d.global_bytes = e * (tiles * weights + tiles * std::min(halo_pixels, p.input_pixels()) * p.C + y) +
                     e * (split - 1) * t + 4.0 * (split - 1) * y;
    d.ctas = tiles * split;
    plans.push_back(d);
  }
  return plans;
}

// ---- tensors ------------------------------------------------------------------------------

std::vector<TensorSpec> OpTraits<ConvFirstProblem>::inputs(const ConvFirstProblem& p) {
  // Weights uniform(-s, s) with s = sqrt(3 / fan-in): each layer keeps the
  // variance of its input, so the conv, the FFN and the shortcut contribute
  // comparable magnitudes to y and a missing residual, bias or tap shows.
  const auto fan = [](double fan_in) { return std::sqrt(3.0 / fan_in); };
  std::vector<TensorSpec> in = {
      {"x", {p.N, p.H, p.W, p.C}, p.dtype, "NHWC", 1.0},
      {"conv_w", {p.C, 3, 3, p.group_width}, p.dtype, "KRSC grouped", fan(9.0 * p.group_width)},
      {"conv_b", {p.C}, p.dtype, "C", 0.5},
      {"u", {p.C, p.hidden}, p.dtype, "row-major Cxhidden", fan(p.C)},
      {"a", {p.hidden}, p.dtype, "hidden", 0.5},
      {"v", {p.hidden, p.C_out}, p.dtype, "row-major hiddenxC_out", fan(p.hidden / 2.0)},
      {"b", {p.C_out}, p.dtype, "C_out", 0.5}};
  if (p.has_projection()) {
    in.push_back({"shortcut_w", {p.C, p.C_out}, p.dtype, "row-major CxC_out", fan(p.C)});
    in.push_back({"shortcut_b", {p.C_out}, p.dtype, "C_out", 0.5});
  }
  return in;
}

std::vector<TensorSpec> OpTraits<ConvFirstProblem>::outputs(const ConvFirstProblem& p) {
  return {{"y", {p.N, p.P(), p.Q(), p.C_out}, p.dtype, "NHWC"}};
}

Args<ConvFirstProblem> OpTraits<ConvFirstProblem>::bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* ws) {
  const bool projection = in.size() == 9;
  return {in.at(0).data(), in.at(1).data(), in.at(2).data(), in.at(3).data(), in.at(4).data(),
          in.at(5).data(), in.at(6).data(), projection ? in.at(7).data() : nullptr,
          projection ? in.at(8).data() : nullptr, out.at(0).data(), ws};
}

void OpTraits<ConvFirstProblem>::reference(const ConvFirstProblem& p, const std::vector<std::vector<double>>& in,
                                           std::vector<std::vector<double>>& out) {
  ref::ConvFirstShape s;
  s.N = p.N, s.H = p.H, s.W = p.W, s.in_channels = p.C, s.hidden_channels = p.hidden, s.out_channels = p.C_out;
  s.stride = p.stride, s.group_width = p.group_width, s.activation = p.activation;
  ref::ConvFirstWeights w;
  w.conv_w = in.at(1).data(), w.conv_b = in.at(2).data();
  w.expand_w = in.at(3).data(), w.expand_b = in.at(4).data();
  w.project_w = in.at(5).data(), w.project_b = in.at(6).data();
  if (p.has_projection()) w.shortcut_w = in.at(7).data(), w.shortcut_b = in.at(8).data();
  ref::convfirst_block(s, w, in.at(0).data(), out.at(0).data());
}

// ---- shape tables ---------------------------------------------------------------------------

namespace {

using enum DType;
constexpr ConvFirstActivation relu = ConvFirstActivation::relu, silu = ConvFirstActivation::silu;

ConvFirstProblem block(int N, int H, int W, int C, int hidden, int C_out, int stride, ConvFirstActivation act,
                       DType dtype) {
  ConvFirstProblem p;
  p.N = N, p.H = H, p.W = W, p.C = C, p.hidden = hidden, p.C_out = C_out, p.stride = stride;
  p.activation = act, p.dtype = dtype;
  return p;
}

// Correctness table, small enough for seconds on 2 cores. Spatial sizes 1, 3,
// 7, 13, 57 (odd, prime, a 128-pixel tile ± a row); C from one group (8) to
// 512, including widths that are multiples of 8 but not of 16
// (24, 40, 72, 136: only the general variants take them); hidden not a
// multiple of the fused kernels' chunks (40, 100, 200, 72); batch 1 and odd
// batches; stride 2 at odd sizes, with and without a projection.
std::vector<ConvFirstProblem> test_shapes() {
  std::vector<ConvFirstProblem> t = {
      // f32: the CPU rungs and the GPU layer-by-layer rung
      block(1, 1, 1, 8, 32, 8, 1, relu, f32),
      block(3, 7, 13, 16, 40, 16, 1, silu, f32),
      block(1, 13, 7, 24, 72, 24, 1, relu, f32),
      block(2, 3, 57, 40, 100, 40, 1, relu, f32),
      block(1, 57, 3, 64, 256, 64, 1, silu, f32),
      block(2, 5, 40, 16, 40, 16, 1, silu, f32),   // W a multiple of 8: row runs at both row ends, tiles that
                                                    // split rows, a tile across two images
      block(1, 7, 7, 72, 200, 72, 1, relu, f32),
      block(1, 3, 3, 136, 544, 136, 1, relu, f32),
      block(1, 13, 7, 16, 64, 24, 2, relu, f32),   // stride 2, projection
      block(3, 7, 7, 8, 32, 8, 2, silu, f32),      // stride 2, identity shortcut
      block(1, 1, 1, 16, 64, 32, 2, relu, f32),    // stride 2 on one pixel
      block(1, 13, 13, 40, 120, 64, 2, relu, f32), // stride 2, odd, C_out > C
      // f16: the GPU rungs (fused: C a multiple of 16 up to 256, hidden a multiple of 8)
      block(1, 1, 1, 16, 64, 16, 1, relu, f16),
      block(3, 7, 13, 64, 200, 64, 1, relu, f16),  // hidden not a multiple of the 64-wide chunk
      block(1, 57, 3, 64, 256, 64, 1, silu, f16),
      block(1, 13, 13, 32, 128, 32, 1, relu, f16),
      block(2, 13, 7, 16, 48, 16, 1, silu, f16),
      block(1, 13, 13, 128, 512, 128, 1, relu, f16),
      block(1, 7, 7, 256, 1024, 256, 1, silu, f16),
      block(1, 3, 57, 24, 72, 24, 1, relu, f16),   // C not a multiple of 16: layer by layer only
      block(1, 7, 7, 136, 544, 136, 1, relu, f16),
      block(1, 13, 13, 64, 256, 128, 2, relu, f16),  // stride 2, projection
      block(3, 7, 9, 16, 64, 32, 2, silu, f16),
      block(1, 7, 7, 32, 128, 32, 2, relu, f16),     // stride 2, identity shortcut
      // the wgmma rung's boundaries: 128-pixel tiles (one pixel short, exact, one over),
      // more tiles than SMs (the persistent CTAs wrap both rings), hidden not a multiple
      // of its 64-wide chunk, C = 128
      block(1, 127, 1, 64, 256, 64, 1, relu, f16),
      block(1, 3, 43, 128, 136, 128, 1, relu, f16),
      block(6, 56, 56, 64, 256, 64, 1, relu, f16),
      block(2, 8, 8, 64, 192, 64, 1, silu, bf16),
      block(1, 29, 31, 128, 512, 128, 1, silu, bf16),
      // the cluster rung's boundaries (C = 256 split over two CTAs, each hidden chunk of 128
      // split 64 | 64): one pixel, a 128-pixel tile − 1, exactly 1, + 1; hidden whose last
      // chunk leaves the second CTA 8 columns (200, 72) or none (136, 64: it skips its expand);
      // odd batches and sizes; 138 tiles, more than two per pair on a 132-SM GPU; bf16, SiLU
      block(1, 1, 1, 256, 256, 256, 1, relu, f16),
      block(1, 127, 1, 256, 136, 256, 1, relu, f16),
      block(2, 8, 8, 256, 200, 256, 1, silu, f16),
      block(1, 3, 43, 256, 256, 256, 1, relu, f16),
      block(3, 13, 11, 256, 72, 256, 1, silu, bf16),
      block(1, 14, 14, 256, 384, 256, 1, relu, bf16),
      block(90, 14, 14, 256, 64, 256, 1, relu, f16),
      // the cluster rung at C = 512 (four CTAs of 128 channels, 64-pixel tiles, hidden chunks of
      // 256 split 64 | 64 | 64 | 64): one pixel; a tile − 1, exactly 1, + 1; hidden whose last
      // chunk leaves the first CTA 8 columns (520, 1032) or the second 8 (328, 136) and the
      // others none; an odd batch with a partial last tile; W = 19 (6 tiles, tiles across rows
      // and images); 35 tiles, more than one per cluster on a 132-SM GPU; bf16, SiLU
      block(1, 1, 1, 512, 520, 512, 1, relu, f16),
      block(1, 63, 1, 512, 256, 512, 1, silu, f16),
      block(1, 8, 8, 512, 328, 512, 1, silu, bf16),
      block(1, 65, 1, 512, 1032, 512, 1, relu, bf16),
      block(3, 7, 7, 512, 1024, 512, 1, relu, f16),
      block(2, 9, 19, 512, 136, 512, 1, relu, f16),
      block(45, 7, 7, 512, 64, 512, 1, silu, f16),
      // stride 2 at the fused stride-2 rung's edges (128-pixel output tiles, C_out = C or 2·C)
      block(5, 1, 1, 16, 40, 32, 2, relu, f16),      // one-pixel images, five in one tile; hidden 40
      block(1, 5, 85, 16, 48, 32, 2, silu, f16),     // 3 × 43 = 129 output pixels: a tile + 1
      block(1, 2, 253, 16, 48, 16, 2, relu, f16),    // 1 × 127 output pixels: a tile − 1
      block(1, 57, 57, 16, 64, 16, 2, relu, f16),    // 29 × 29, tiles starting mid-row
      block(2, 3, 57, 32, 72, 64, 2, silu, f16),     // hidden 72: not a multiple of the chunk
      block(3, 13, 13, 64, 200, 128, 2, silu, f16),  // odd batch, hidden 200, tiles across images
      block(1, 7, 9, 128, 256, 128, 2, relu, f16),
      block(1, 3, 5, 128, 128, 256, 2, silu, f16),
      // bf16: the fused rung
      block(1, 13, 7, 64, 256, 64, 1, relu, bf16),
      block(3, 3, 13, 16, 40, 16, 1, silu, bf16),
      block(1, 13, 13, 64, 256, 128, 2, relu, bf16),
      block(1, 57, 3, 64, 200, 64, 2, relu, bf16),   // stride 2, identity, W = 3
      block(1, 5, 85, 16, 48, 32, 2, silu, bf16),
      block(3, 1, 57, 32, 40, 32, 2, relu, bf16),    // H = 1
      block(1, 3, 5, 128, 128, 256, 2, relu, bf16),
  };
  return t;
}

}  // namespace

std::vector<ConvFirstProblem> OpTraits<ConvFirstProblem>::shapes(ShapeTable table, Device device) {
  const bool gpu = device == Device::gpu;
  switch (table) {
    case ShapeTable::test: return test_shapes();
    case ShapeTable::tour:
      return {gpu ? block(128, 56, 56, 64, 256, 64, 1, relu, f16) : block(2, 28, 28, 64, 256, 64, 1, relu, f32)};
    case ShapeTable::bench:
      if (gpu)  // the goal shapes: N = 128, f16, α = 4, ReLU
        return {block(128, 56, 56, 64, 256, 64, 1, relu, f16), block(128, 28, 28, 128, 512, 128, 1, relu, f16),
                block(128, 14, 14, 256, 1024, 256, 1, relu, f16), block(128, 7, 7, 512, 2048, 512, 1, relu, f16),
                block(128, 56, 56, 64, 256, 128, 2, relu, f16)};
      // The hidden tensor (16·56·56·256 floats, 51 MB) does not fit the caches (the 2-core
      // machine's L3 is 32 MB), nor do x, t and y together (3 × 12.8 MB).
      return {block(16, 56, 56, 64, 256, 64, 1, relu, f32)};
  }
  return {};
}

std::string OpTraits<ConvFirstProblem>::spec(const ConvFirstProblem& p) {
  std::string s = "N=" + std::to_string(p.N);
  s += ",H=" + std::to_string(p.H) + ",W=" + std::to_string(p.W) + ",C=" + std::to_string(p.C);
  s += ",hidden=" + std::to_string(p.hidden) + ",C_out=" + std::to_string(p.C_out);
  s += ",stride=" + std::to_string(p.stride) + ",gw=" + std::to_string(p.group_width);
  s += std::string(",act=") + ref::activation_name(p.activation) + ",dtype=" + dtype_name(p.dtype);
  return s;
}

std::string OpTraits<ConvFirstProblem>::label(const ConvFirstProblem& p) {
  std::string s = "n";
  s += std::to_string(p.N);
  s += "_" + std::to_string(p.H) + "x" + std::to_string(p.W);
  s += "_c" + std::to_string(p.C) + "_h" + std::to_string(p.hidden) + "_co" + std::to_string(p.C_out);
  s += "_s" + std::to_string(p.stride);
  if (p.group_width != 8) s += "_gw" + std::to_string(p.group_width);
  s += std::string("_") + ref::activation_name(p.activation) + "_" + dtype_name(p.dtype);
  return s;
}

namespace {

ConvFirstActivation parse_activation(const std::string& s) {
  for (ConvFirstActivation a : {relu, silu})
    if (s == ref::activation_name(a)) return a;
  throw SpecError("unknown activation '" + s + "' for convfirst (expected relu or silu)");
}

void validate(const ConvFirstProblem& p) {
  const std::string why = p.invalid_reason();
  if (!why.empty()) throw SpecError("invalid convfirst problem: " + why);
}

}  // namespace

ConvFirstProblem OpTraits<ConvFirstProblem>::parse(const std::string& text) {
  const KeyValues kv(text);
  kv.require_only({"N", "H", "W", "C", "hidden", "C_out", "stride", "gw", "act", "dtype"}, "convfirst");
  ConvFirstProblem p;
  p.N = kv.get_int("N", 1);
  p.H = kv.get_int("H", 8);
  p.W = kv.get_int("W", p.H);
  p.C = kv.get_int("C", 64);
  // The default hidden = 4·C, in 64 bits and held to a key's 2^30 bound (KeyValues::get_int).
  if (!kv.has("hidden") && int64_t(p.C) * 4 > (int64_t(1) << 30))
    throw SpecError("invalid convfirst problem: the default hidden = 4*C = " + std::to_string(int64_t(p.C) * 4) +
                    " is over 1073741824, the largest size a key takes; give hidden=... or a smaller C");
  p.hidden = kv.has("hidden") ? kv.get_int("hidden", 0) : 4 * p.C;
  p.C_out = kv.get_int("C_out", p.C);
  p.stride = kv.get_int("stride", 1);
  p.group_width = kv.get_int("gw", 8);
  p.activation = parse_activation(kv.get("act", "relu"));
  p.dtype = parse_dtype(kv.get("dtype", "f32"));
  validate(p);
  return p;
}

ConvFirstProblem OpTraits<ConvFirstProblem>::from_input_shapes(const std::vector<Shape>& s, DType dtype,
                                                               const KeyValues& options) {
  options.require_only({"stride", "act"}, "convfirst with --in (shapes come from the files)");
  const auto rank = [&](std::size_t i, std::size_t r) { return s[i].size() == r; };
  const bool seven = s.size() == 7, nine = s.size() == 9;
  if (!(seven || nine) || !rank(0, 4) || !rank(1, 4) || !rank(2, 1) || !rank(3, 2) || !rank(4, 1) || !rank(5, 2) ||
      !rank(6, 1) || (nine && (!rank(7, 2) || !rank(8, 1))))
    throw SpecError(
        "convfirst takes x [N,H,W,C], conv_w [C,3,3,gw], conv_b [C], u [C,hidden], a [hidden], v [hidden,C_out], "
        "b [C_out] (and shortcut_w [C,C_out], shortcut_b [C_out] for a stride-2 block with C_out != C)");
  ConvFirstProblem p;
  p.N = int(s[0][0]), p.H = int(s[0][1]), p.W = int(s[0][2]), p.C = int(s[0][3]);
  p.group_width = int(s[1][3]);
  p.hidden = int(s[3][1]);
  p.C_out = int(s[5][1]);
  p.stride = options.get_int("stride", 1);
  p.activation = parse_activation(options.get("act", "relu"));
  p.dtype = dtype;
  validate(p);
  if (nine != p.has_projection())
    throw SpecError(p.has_projection() ? "this stride-2 block changes the channel count: give shortcut_w and shortcut_b"
                                       : "shortcut_w and shortcut_b were given, but this block's shortcut is the identity");
  // The remaining dimensions are checked against inputs() by the harness, with a message naming the tensor.
  return p;
}

}  // namespace convlab
