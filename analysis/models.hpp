// analysis/models.hpp — layer tables of real networks, generated from their
// published architecture definitions (counting conventions: network.hpp).
//
// Every builder returns the network at batch 1 with 2-byte elements; use
// at_batch() for the paper's batch 128, or another element size.
// `resolution` 0 means the network's own input size (224 unless stated).
//
//   resnet(50 | 101)        He et al. 2016, bottleneck blocks, stride on the 3x3
//                           conv ("v1.5", as in torchvision)
//   mobilenet_v2(width)     Sandler et al. 2018, Table 2 (inverted residuals)
//   efficientnet(0..7)      Tan & Le 2019: B0 of Table 1 scaled by the compound
//                           rule (width, depth, resolution per variant)
//   convnext('T'|'S'|'B')   Liu et al. 2022: patchify stem, 7x7 depthwise,
//                           LayerNorm, inverted FFN, layer scale
//   convfirstnet(config)    Lavin's ConvFirst blocks (grouped 3x3, gw 8 → FFN →
//                           residual; BlurPool for stride 2), configurable
#pragma once

#include <string>
#include <vector>

#include "analysis/network.hpp"

namespace convlab::analysis {

Network resnet(int depth, int resolution = 0);                     // depth 50 or 101
Network mobilenet_v2(double width_multiplier = 1.0, int resolution = 0);
Network efficientnet(int variant, int resolution = 0);             // 0..7 = B0..B7 (B0 224 … B7 600)
Network convnext(const std::string& size, int resolution = 0);     // "T", "S" or "B"

// EfficientNet's compound scaling coefficients, one row per variant B0..B7
// (Tan & Le 2019, the released model table: width, depth, resolution).
struct CompoundScaling {
  double width = 1.0;   // channel multiplier
  double depth = 1.0;   // repeat multiplier
  int resolution = 224;
};
CompoundScaling efficientnet_scaling(int variant);
// Channels scaled by `width` and rounded to the nearest multiple of 8, never
// more than 10% below the unrounded value (the reference round_filters).
int efficientnet_round_filters(int channels, double width);
// Repeats scaled by `depth`, rounded up (the reference round_repeats).
int efficientnet_round_repeats(int repeats, double depth);

// ConvFirstNet: a stem, then stages of ConvFirst blocks; every stage after the
// first opens with the stride-2 (BlurPool) block that also changes the width.
// The paper's own ConvFirstNet sizes (its §6) are not in our copy; the default
// below is an illustrative mid-size instance, not a published model.
struct ConvFirstNetConfig {
  std::string name = "convfirstnet";
  int resolution = 224;
  int stem_convs = 2;                  // dense 3x3 stride-2 convs: 224 → 112 → 56
  int stem_channels = 32;              // width of every stem conv but the last, which gives widths[0]
  std::vector<int> widths{64, 128, 256, 512};
  std::vector<int> depths{2, 3, 8, 2};  // blocks per stage, including the stride-2 one
  int expansion = 4;                   // FFN hidden width = expansion · (the block's input channels)
  int group_width = 8;                 // channels per group of the 3x3 conv
  int head_channels = 1280;            // 1x1 conv before pooling; 0 for none
  int num_classes = 1000;
};
Network convfirstnet(const ConvFirstNetConfig& config = {});

// Lower-case names network_by_name accepts, in a fixed order.
std::vector<std::string> network_names();
// "resnet50", "resnet101", "mobilenet_v2", "efficientnet_b0".."efficientnet_b7",
// "convnext_t", "convnext_s", "convnext_b", "convfirstnet" (case and '-' vs
// '_' ignored). Throws std::invalid_argument naming every valid name.
Network network_by_name(const std::string& name);

}  // namespace convlab::analysis
