// analysis/network.hpp — layer tables of whole networks: one row per kernel,
// each row carrying its kind, its shapes, its multiply-accumulates, its
// parameters and the DRAM traffic it cannot avoid.
//
// A network is read here as a *sequence of kernels run one after another*
// (layer-by-layer execution), with only the "trivial fusions" of Lavin §4.2:
// a convolution (or linear layer) runs together with its bias, its folded
// batch-norm, its activation and a residual addition in one kernel. Anything
// else is a kernel of its own.
//
// ---- Counting conventions (applied by every builder in models.hpp) ---------
//
// MACs      multiply-accumulates of convolutions, per-pixel linear layers,
//           fully-connected layers and the two FC layers of squeeze-excitation.
//           Pooling, normalization, activations, residual additions and the SE
//           scaling multiply count zero. This is what the published "GMACs" /
//           "FLOPs" figures of ResNet, MobileNetV2, EfficientNet and ConvNeXt
//           count. Bias additions are not counted (the "+K" of Eq. 21 is
//           negligible). OPs = 2 · MACs (Lavin §4: one MAC is two OPs).
//
// params    learned parameters as the published counts give them: conv and FC
//           weights, their biases when the layer has one, batch-norm γ and β
//           (running mean and variance are buffers, not parameters),
//           LayerNorm γ and β, ConvNeXt's layer-scale γ.
//
// bytes     compulsory DRAM traffic (Eq. 23) of the *inference* kernel, in
//           elements times bytes_per_element:
//             * every activation element the kernel consumes is read once,
//               every element it produces is written once;
//             * weights are read once, in their inference form: batch-norm
//               folded into the conv's weights and a per-channel bias (so a
//               conv followed by BN reads K·R·S·T + K elements, Eq. 23), and
//               ConvNeXt's layer-scale folded into the preceding weights;
//             * a residual addition fused into the conv that produces the
//               block output adds one read of the shortcut tensor (which has
//               the output's shape);
//             * pooling (max, average, BlurPool) reads its input and writes
//               its output; its fixed filter is not a weight;
//             * squeeze-excitation is two kernels: the "SE" kernel reads the
//               [N,H,W,C] tensor, pools it, runs both FC layers and writes the
//               [N,C] gate (its FC weights and biases are read once); the
//               "scale" kernel (element-wise) reads the tensor and the gate
//               and writes the scaled tensor;
//             * LayerNorm (ConvNeXt) is an element-wise kernel: it reads and
//               writes the tensor and reads its γ, β.
//
// Everything above except the weights is proportional to the batch N, so a
// table built at one batch rescales exactly to another (at_batch below).
#pragma once

#include <string>
#include <vector>

namespace convlab::analysis {

enum class LayerType {
  dense,           // conv, groups == 1, kernel larger than 1x1
  grouped,         // conv, 1 < groups < channels
  depthwise,       // conv, one input channel per group
  pointwise,       // 1x1 conv, groups == 1 (also ConvNeXt's per-pixel Linear)
  linear,          // fully connected on a pooled [N, C] vector (the classifier)
  pooling,         // max / average / global average / BlurPool
  squeeze_excite,  // global pool + FC + act + FC + sigmoid → per-channel gate
  elementwise,     // SE scaling multiply, LayerNorm
  fused_block,     // a whole residual block as one kernel (block_fused below)
};

const char* layer_type_name(LayerType type);  // "dense", "depthwise", ...

// Activation shape, NHWC: batch, height, width, channels.
struct ActivationShape {
  int N = 1, H = 1, W = 1, C = 1;
  double elems() const { return double(N) * H * W * C; }
};

std::string shape_string(const ActivationShape& shape);  // "128x56x56x256"

struct Layer {
  std::string name;   // "layer3.4.conv2"
  LayerType type = LayerType::dense;
  std::string block;  // the residual block it belongs to ("" for stem and head)
  ActivationShape input;   // N, H, W, C
  ActivationShape output;  // N, P, Q, K
  int R = 1, S = 1;        // kernel extent (1x1 for non-spatial layers; 0 for a fused block)
  int stride = 1;
  int groups = 1;

  double macs = 0;              // multiply-accumulates (see the conventions above)
  double params = 0;            // learned parameters, as published counts count them
  double activation_elems = 0;  // activation elements read + written (incl. a fused residual read)
  double weight_elems = 0;      // inference-form weight elements read (BN folded)
  double bytes = 0;             // (activation_elems + weight_elems) · bytes_per_element

  double ops() const { return 2.0 * macs; }
  double intensity() const { return bytes > 0 ? ops() / bytes : 0.0; }  // OPs per byte
};

struct Network {
  std::string name;                // "resnet50"
  int resolution = 224;            // input height = width
  int batch = 1;                   // N of every row
  double bytes_per_element = 2.0;  // fp16 by default (the paper's setting)
  std::vector<Layer> layers;

  double total_macs() const;
  double total_ops() const { return 2.0 * total_macs(); }
  double total_params() const;  // batch-independent
  double total_bytes() const;
};

// The same network at another batch and element size. Exact: MACs and
// activation traffic scale with N, weights and parameters do not.
Network at_batch(const Network& network, int batch, double bytes_per_element);

// Every run of consecutive layers sharing a non-empty `block` becomes one
// kernel (LayerType::fused_block): the MACs and parameters add up, and the
// DRAM traffic is only the block's input (read once, which also serves the
// shortcut), all the block's weights, and the block's output. This is the
// compulsory traffic of a block-fusion kernel (Lavin §5), the lower bound the
// ConvFirst and MBConv kernels of lessons 10 and 11 aim at.
Network block_fused(const Network& network);

}  // namespace convlab::analysis
