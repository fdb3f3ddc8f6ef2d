// analysis/models.cpp — the network builders. Each one walks its published
// architecture definition block by block, the way the paper's tables read,
// and appends one row per kernel through TableBuilder, which applies the
// counting conventions of network.hpp in one place. Conv rows take their
// MACs and tensor sizes from ConvProblem (ops/conv2d.hpp), the single
// source of conv arithmetic; the builder adds only what ConvProblem leaves
// out (the bias vector, batch-norm parameters, the residual read).
#include "analysis/models.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

#include "ops/conv2d.hpp"

namespace convlab::analysis {

namespace {

// What follows a conv inside its kernel (all fused: Lavin's trivial fusions).
struct ConvExtras {
  bool batchnorm = true;   // BN after the conv: 2K parameters, folded into a K-vector bias
  bool bias = false;       // the conv has its own bias (ConvNeXt); K parameters
  bool residual = false;   // the kernel also adds the shortcut tensor (one more read)
  int pad = -1;            // -1: "same" for odd kernels ((R-1)/2), 0 for even (patchify)
};

class TableBuilder {
 public:
  TableBuilder(std::string name, int resolution, int channels = 3) {
    network_.name = std::move(name);
    network_.resolution = resolution;
    network_.batch = 1;
    network_.bytes_per_element = 2.0;
    shape = {1, resolution, resolution, channels};
  }

  ActivationShape shape;  // the tensor the next kernel reads
  std::string block;      // the residual block the next kernels belong to

  // conv2d with K output channels, R x R kernel, on `shape`; `shape` becomes its output.
  void conv(const std::string& name, int K, int R, int stride, int groups, ConvExtras extras = {}) {
    ConvProblem p;
    p.N = shape.N, p.H = shape.H, p.W = shape.W, p.C = shape.C;
    p.K = K, p.R = R, p.S = R, p.stride = stride, p.groups = groups;
    p.pad = extras.pad >= 0 ? extras.pad : (R % 2 == 1 ? (R - 1) / 2 : 0);
    p.dtype = DType::f16;
    if (!p.valid()) throw std::logic_error(network_.name + " " + name + ": " + p.invalid_reason());

    Layer l = start(name, conv_type(p));
    l.output = {p.N, p.P(), p.Q(), p.K};
    l.R = p.R, l.S = p.S, l.stride = p.stride, l.groups = p.groups;
    l.macs = p.flops() / 2.0;  // T·R·S MACs per output element
    const double bias_elems = (extras.batchnorm || extras.bias) ? K : 0;
    l.params = p.weight_elems() + (extras.bias ? K : 0) + (extras.batchnorm ? 2.0 * K : 0);
    l.weight_elems = p.weight_elems() + bias_elems;  // inference form: BN folded into weight and bias
    l.activation_elems = p.input_elems() + p.output_elems() + (extras.residual ? p.output_elems() : 0);
    finish(std::move(l));
  }

  // Max or average pooling with an R x R window.
  void pool(const std::string& name, int R, int stride, int pad) {
    Layer l = start(name, LayerType::pooling);
    l.output = {shape.N, (shape.H + 2 * pad - R) / stride + 1, (shape.W + 2 * pad - R) / stride + 1, shape.C};
    l.R = l.S = R, l.stride = stride;
    l.activation_elems = l.input.elems() + l.output.elems();
    finish(std::move(l));
  }

  // BlurPool: fixed binomial 3x3 blur, stride 2, zero pad 1 (reference/pooling.hpp).
  void blurpool(const std::string& name) { pool(name, 3, 2, 1); }

  // Global average pooling: [N,H,W,C] → [N,1,1,C].
  void global_pool(const std::string& name) {
    Layer l = start(name, LayerType::pooling);
    l.output = {shape.N, 1, 1, shape.C};
    l.R = shape.H, l.S = shape.W, l.stride = 1;
    l.activation_elems = l.input.elems() + l.output.elems();
    finish(std::move(l));
  }

  // Fully-connected layer on a pooled [N,1,1,C] vector.
  void linear(const std::string& name, int K, bool bias = true) {
    if (shape.H != 1 || shape.W != 1) throw std::logic_error(network_.name + " " + name + ": linear needs a pooled input");
    Layer l = start(name, LayerType::linear);
    l.output = {shape.N, 1, 1, K};
    l.macs = double(shape.N) * shape.C * K;
    l.params = double(shape.C) * K + (bias ? K : 0);
    l.weight_elems = l.params;
    l.activation_elems = l.input.elems() + l.output.elems();
    finish(std::move(l));
  }

  // Squeeze-excitation on `shape` [N,H,W,C] with `reduced` bottleneck channels
  // (both FC layers with bias): the SE kernel (pool, FC, act, FC, sigmoid →
  // gate [N,C]) and then the element-wise scaling kernel. `shape` is unchanged.
  void squeeze_excite(const std::string& name, int reduced) {
    const ActivationShape x = shape;
    Layer se = start(name + ".se", LayerType::squeeze_excite);
    se.output = {x.N, 1, 1, x.C};
    se.R = x.H, se.S = x.W;
    se.macs = double(x.N) * (double(x.C) * reduced + double(reduced) * x.C);
    se.params = double(x.C) * reduced + reduced + double(reduced) * x.C + x.C;
    se.weight_elems = se.params;
    se.activation_elems = x.elems() + se.output.elems();
    finish(std::move(se));

    shape = x;
    Layer scale = start(name + ".scale", LayerType::elementwise);
    scale.output = x;
    scale.activation_elems = x.elems() + double(x.N) * x.C + x.elems();  // tensor + gate in, tensor out
    finish(std::move(scale));
  }

  // LayerNorm over channels (ConvNeXt): an element-wise kernel with γ, β.
  void layer_norm(const std::string& name) {
    Layer l = start(name, LayerType::elementwise);
    l.output = shape;
    l.params = 2.0 * shape.C;
    l.weight_elems = 2.0 * shape.C;
    l.activation_elems = 2.0 * shape.elems();
    finish(std::move(l));
  }

  // Parameters with no kernel of their own at inference (ConvNeXt's layer
  // scale, folded into the previous conv): counted on the last row.
  void add_folded_params(double params) { network_.layers.back().params += params; }

  Network take() { return std::move(network_); }

 private:
  static LayerType conv_type(const ConvProblem& p) {
    if (p.groups == 1) return (p.R == 1 && p.S == 1) ? LayerType::pointwise : LayerType::dense;
    if (p.T() == 1) return LayerType::depthwise;
    return LayerType::grouped;
  }
  Layer start(const std::string& name, LayerType type) const {
    Layer l;
    l.name = name;
    l.type = type;
    l.block = block;
    l.input = shape;
    return l;
  }
  void finish(Layer l) {
    l.bytes = (l.activation_elems + l.weight_elems) * network_.bytes_per_element;
    shape = l.output;
    network_.layers.push_back(std::move(l));
  }

  Network network_;
};

int native_or(int resolution, int native) { return resolution > 0 ? resolution : native; }

}  // namespace

// ============================================================================
// ResNet-50 / -101 (He et al. 2016, Table 1), bottleneck blocks with the
// stride on the 3x3 conv as torchvision builds them; every conv is followed by
// BN and ReLU except the third of a block, which is followed by the residual
// add and then ReLU, all in one kernel.
// ============================================================================
Network resnet(int depth, int resolution) {
  std::vector<int> blocks_per_stage;
  if (depth == 50) blocks_per_stage = {3, 4, 6, 3};
  else if (depth == 101) blocks_per_stage = {3, 4, 23, 3};
  else throw std::invalid_argument("resnet: depth must be 50 or 101, not " + std::to_string(depth));

  TableBuilder b("resnet" + std::to_string(depth), native_or(resolution, 224));
  b.conv("conv1", 64, 7, 2, 1);   // 224 → 112
  b.pool("maxpool", 3, 2, 1);     // 112 → 56
  for (int stage = 0; stage < 4; ++stage) {
    const int width = 64 << stage;  // bottleneck width: 64, 128, 256, 512
    const int out = 4 * width;      // expansion 4
    for (int j = 0; j < blocks_per_stage[stage]; ++j) {
      const std::string prefix = "layer" + std::to_string(stage + 1) + "." + std::to_string(j);
      b.block = prefix;
      const int stride = (j == 0 && stage > 0) ? 2 : 1;
      const ActivationShape x = b.shape;
      if (j == 0) {  // projection shortcut: 1x1 conv (stride) + BN, a kernel of its own
        b.conv(prefix + ".downsample", out, 1, stride, 1);
        b.shape = x;
      }
      b.conv(prefix + ".conv1", width, 1, 1, 1);
      b.conv(prefix + ".conv2", width, 3, stride, 1);
      b.conv(prefix + ".conv3", out, 1, 1, 1, {.residual = true});
    }
  }
  b.block.clear();
  b.global_pool("avgpool");
  b.linear("fc", 1000);
  return b.take();
}

// ============================================================================
// MobileNetV2 (Sandler et al. 2018, Table 2): stem conv, 17 inverted residual
// blocks (t = expansion, c = channels, n = repeats, s = first stride), a 1x1
// conv to 1280 channels, pooling and the classifier. Every conv has BN; ReLU6
// after expand and depthwise, none after project.
// ============================================================================
namespace {
// Channels rounded to a multiple of 8, never more than 10% below the
// unrounded value (the reference implementation's _make_divisible).
int make_divisible(double value, int divisor = 8) {
  int rounded = std::max(divisor, int(value + divisor / 2.0) / divisor * divisor);
  if (rounded < 0.9 * value) rounded += divisor;
  return rounded;
}
}  // namespace

Network mobilenet_v2(double width_multiplier, int resolution) {
  struct Stage { int expansion, channels, repeats, stride; };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  TableBuilder b("mobilenet_v2", native_or(resolution, 224));
  int in = make_divisible(32 * width_multiplier);
  b.conv("features.0", in, 3, 2, 1);
  int index = 1;
  for (const Stage& s : stages) {
    const int out = make_divisible(s.channels * width_multiplier);
    for (int i = 0; i < s.repeats; ++i, ++index) {
      const std::string prefix = "features." + std::to_string(index);
      b.block = prefix;
      const int stride = i == 0 ? s.stride : 1;
      const int hidden = int(std::lround(in * double(s.expansion)));
      if (s.expansion != 1) b.conv(prefix + ".expand", hidden, 1, 1, 1);
      b.conv(prefix + ".depthwise", hidden, 3, stride, hidden);
      b.conv(prefix + ".project", out, 1, 1, 1, {.residual = stride == 1 && in == out});
      in = out;
    }
  }
  b.block.clear();
  const int last = width_multiplier > 1.0 ? make_divisible(1280 * width_multiplier) : 1280;
  b.conv("features.18", last, 1, 1, 1);
  b.global_pool("avgpool");
  b.linear("classifier", 1000);
  return b.take();
}

// ============================================================================
// EfficientNet (Tan & Le 2019): the B0 baseline of Table 1, scaled by the
// compound rule. MBConv: expand 1x1 (absent when the ratio is 1), depthwise
// kxk, squeeze-excitation with max(1, C_in/4) channels, project 1x1, residual
// when the stride is 1 and the width unchanged. SiLU throughout, BN on every
// conv; the SE FC layers have biases.
// ============================================================================
CompoundScaling efficientnet_scaling(int variant) {
  // width, depth, resolution of the released B0..B7 models.
  static const CompoundScaling table[] = {{1.0, 1.0, 224}, {1.0, 1.1, 240}, {1.1, 1.2, 260}, {1.2, 1.4, 300},
                                          {1.4, 1.8, 380}, {1.6, 2.2, 456}, {1.8, 2.6, 528}, {2.0, 3.1, 600}};
  if (variant < 0 || variant > 7) throw std::invalid_argument("efficientnet: variant must be 0..7 (B0..B7)");
  return table[variant];
}

int efficientnet_round_filters(int channels, double width) { return make_divisible(channels * width, 8); }

int efficientnet_round_repeats(int repeats, double depth) {
  // The tiny epsilon keeps products such as 1.1 × 10 = 11.000000000000002 from rounding up.
  return int(std::ceil(depth * repeats - 1e-9));
}

Network efficientnet(int variant, int resolution) {
  const CompoundScaling scale = efficientnet_scaling(variant);
  struct Stage { int expansion, kernel, stride, in, out, repeats; };
  const Stage stages[] = {{1, 3, 1, 32, 16, 1},  {6, 3, 2, 16, 24, 2},  {6, 5, 2, 24, 40, 2},  {6, 3, 2, 40, 80, 3},
                          {6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4}, {6, 3, 1, 192, 320, 1}};
  TableBuilder b("efficientnet_b" + std::to_string(variant), native_or(resolution, scale.resolution));
  b.conv("stem", efficientnet_round_filters(32, scale.width), 3, 2, 1);
  int block_index = 0;
  for (int st = 0; st < 7; ++st) {
    const Stage& s = stages[st];
    int in = efficientnet_round_filters(s.in, scale.width);
    const int out = efficientnet_round_filters(s.out, scale.width);
    const int repeats = efficientnet_round_repeats(s.repeats, scale.depth);
    for (int i = 0; i < repeats; ++i, ++block_index) {
      const std::string prefix = "blocks." + std::to_string(block_index);
      b.block = prefix;
      const int stride = i == 0 ? s.stride : 1;
      const int hidden = in * s.expansion;
      if (s.expansion != 1) b.conv(prefix + ".expand", hidden, 1, 1, 1);
      b.conv(prefix + ".depthwise", hidden, s.kernel, stride, hidden);
      b.squeeze_excite(prefix, std::max(1, in / 4));
      b.conv(prefix + ".project", out, 1, 1, 1, {.residual = stride == 1 && in == out});
      in = out;
    }
  }
  b.block.clear();
  b.conv("head", efficientnet_round_filters(1280, scale.width), 1, 1, 1);
  b.global_pool("avgpool");
  b.linear("classifier", 1000);
  return b.take();
}

// ============================================================================
// ConvNeXt (Liu et al. 2022): 4x4 stride-4 "patchify" stem + LayerNorm;
// stages separated by LayerNorm + 2x2 stride-2 conv; block = 7x7 depthwise
// (bias) → LayerNorm → Linear C→4C (bias, GELU) → Linear 4C→C (bias) → layer
// scale → residual. The per-pixel Linear layers are 1x1 convs (pointwise).
// Head: global pool → LayerNorm → Linear.
// ============================================================================
Network convnext(const std::string& size, int resolution) {
  std::vector<int> dims, depths;
  std::string upper = size;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return char(std::toupper(c)); });
  if (upper == "T") dims = {96, 192, 384, 768}, depths = {3, 3, 9, 3};
  else if (upper == "S") dims = {96, 192, 384, 768}, depths = {3, 3, 27, 3};
  else if (upper == "B") dims = {128, 256, 512, 1024}, depths = {3, 3, 27, 3};
  else throw std::invalid_argument("convnext: size must be T, S or B, not '" + size + "'");

  std::string lower = upper;
  lower[0] = char(std::tolower(static_cast<unsigned char>(lower[0])));
  TableBuilder b("convnext_" + lower, native_or(resolution, 224));
  const ConvExtras bias_no_bn{.batchnorm = false, .bias = true};
  b.conv("stem", dims[0], 4, 4, 1, bias_no_bn);  // patchify: 224 → 56
  b.layer_norm("stem.norm");
  for (int stage = 0; stage < 4; ++stage) {
    const int C = dims[stage];
    if (stage > 0) {
      const std::string prefix = "downsample" + std::to_string(stage);
      b.layer_norm(prefix + ".norm");
      b.conv(prefix + ".conv", C, 2, 2, 1, bias_no_bn);
    }
    for (int j = 0; j < depths[stage]; ++j) {
      const std::string prefix = "stages." + std::to_string(stage) + "." + std::to_string(j);
      b.block = prefix;
      b.conv(prefix + ".dwconv", C, 7, 1, C, bias_no_bn);
      b.layer_norm(prefix + ".norm");
      b.conv(prefix + ".pwconv1", 4 * C, 1, 1, 1, bias_no_bn);
      b.conv(prefix + ".pwconv2", C, 1, 1, 1, {.batchnorm = false, .bias = true, .residual = true});
      b.add_folded_params(C);  // layer scale γ, folded into pwconv2 for inference
    }
    b.block.clear();
  }
  b.global_pool("avgpool");
  b.layer_norm("head.norm");
  b.linear("head.fc", 1000);
  return b.take();
}

// ============================================================================
// ConvFirstNet: stem, then stages of ConvFirst blocks (reference/blocks.hpp
// gives the block exactly). BN after each linear layer, folded for inference.
//   stride 1:  grouped 3x3 (gw 8) → pointwise C→αC (act) → pointwise αC→C + x
//   stride 2:  grouped 3x3 at stride 1 → BlurPool → pointwise C→αC (act) →
//              pointwise αC→Cout + shortcut, shortcut = BlurPool(x), then a
//              1x1 projection when Cout ≠ C.
// ============================================================================
Network convfirstnet(const ConvFirstNetConfig& config) {
  const auto fail = [&](const std::string& why) { throw std::invalid_argument("convfirstnet: " + why); };
  if (config.widths.empty() || config.widths.size() != config.depths.size())
    fail("widths and depths must be non-empty and of equal length");
  if (config.group_width <= 0 || config.expansion <= 0 || config.stem_convs <= 0 || config.stem_channels <= 0 ||
      config.resolution <= 0 || config.num_classes <= 0)
    fail("group_width, expansion, stem_convs, stem_channels, resolution and num_classes must be positive");
  for (std::size_t i = 0; i < config.widths.size(); ++i) {
    if (config.widths[i] <= 0 || config.widths[i] % config.group_width != 0)
      fail("every width must be a positive multiple of group_width (" + std::to_string(config.group_width) + ")");
    if (config.depths[i] <= 0) fail("every depth must be positive");
  }

  TableBuilder b(config.name, config.resolution);
  for (int i = 0; i < config.stem_convs; ++i) {
    const bool last = i + 1 == config.stem_convs;
    b.conv("stem.conv" + std::to_string(i), last ? config.widths[0] : config.stem_channels, 3, 2, 1);
  }
  const int gw = config.group_width;
  for (std::size_t stage = 0; stage < config.widths.size(); ++stage) {
    const int out = config.widths[stage];
    for (int j = 0; j < config.depths[stage]; ++j) {
      const std::string prefix = "stages." + std::to_string(stage) + "." + std::to_string(j);
      b.block = prefix;
      const int C = b.shape.C;
      const int hidden = config.expansion * C;
      const bool downsample = stage > 0 && j == 0;
      if (!downsample) {
        b.conv(prefix + ".gconv", C, 3, 1, C / gw);
        b.conv(prefix + ".expand", hidden, 1, 1, 1);
        b.conv(prefix + ".project", C, 1, 1, 1, {.residual = true});
        continue;
      }
      const ActivationShape x = b.shape;
      b.conv(prefix + ".gconv", C, 3, 1, C / gw);
      b.blurpool(prefix + ".blur");
      b.conv(prefix + ".expand", hidden, 1, 1, 1);
      const ActivationShape hidden_shape = b.shape;
      b.shape = x;
      b.blurpool(prefix + ".shortcut.blur");
      if (out != C) b.conv(prefix + ".shortcut.proj", out, 1, 1, 1);
      b.shape = hidden_shape;
      b.conv(prefix + ".project", out, 1, 1, 1, {.residual = true});
    }
  }
  b.block.clear();
  if (config.head_channels > 0) b.conv("head", config.head_channels, 1, 1, 1);
  b.global_pool("avgpool");
  b.linear("classifier", config.num_classes);
  return b.take();
}

// ============================================================================
// Lookup by name.
// ============================================================================
std::vector<std::string> network_names() {
  return {"resnet50",        "resnet101",       "mobilenet_v2",    "efficientnet_b0", "efficientnet_b1",
          "efficientnet_b2", "efficientnet_b3", "efficientnet_b4", "efficientnet_b5", "efficientnet_b6",
          "efficientnet_b7", "convnext_t",      "convnext_s",      "convnext_b",      "convfirstnet"};
}

Network network_by_name(const std::string& name) {
  // Compare with case, '-' and '_' ignored: "EfficientNet-B5" == "efficientnet_b5".
  const auto squash = [](const std::string& s) {
    std::string out;
    for (const char c : s)
      if (c != '-' && c != '_') out += char(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string key = squash(name);
  if (key == "resnet50") return resnet(50);
  if (key == "resnet101") return resnet(101);
  if (key == "mobilenetv2") return mobilenet_v2(1.0);
  for (int v = 0; v <= 7; ++v)
    if (key == "efficientnetb" + std::to_string(v)) return efficientnet(v);
  if (key == "convnextt") return convnext("T");
  if (key == "convnexts") return convnext("S");
  if (key == "convnextb") return convnext("B");
  if (key == "convfirstnet") return convfirstnet();
  std::string valid;
  for (const std::string& n : network_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown network '" + name + "' (valid: " + valid + ")");
}

}  // namespace convlab::analysis
