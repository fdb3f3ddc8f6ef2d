// tests/analysis/test_networks.cpp — the layer tables against the published
// totals of each network (MACs and parameters, batch 1, native resolution),
// hand-computed rows for each counting convention of analysis/network.hpp,
// rebatching, block fusion, name lookup and the accuracy table.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>

#include "analysis/accuracy.hpp"
#include "analysis/models.hpp"
#include "ops/conv2d.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace an = convlab::analysis;

namespace {

using convlab::testing::throws;

double relative_error(double value, double published) { return std::abs(value - published) / published; }

const an::Layer& find_layer(const an::Network& net, const char* name) {  // not std::string: GCC 13 takes the temporary for a dangling reference
  for (const an::Layer& l : net.layers)
    if (l.name == name) return l;
  throw std::runtime_error(std::string("no layer ") + name + " in " + net.name);
}

struct Published {
  const char* network;
  double macs;         // 0: not checked
  double params;       // 0: not checked
  double tolerance;    // relative
  const char* source;
};

}  // namespace

TEST_CASE("network totals match the published MACs and parameters", "[analysis][cpu]") {
  // Published figures (MACs and parameters at batch 1, native resolution):
  //   ResNet: torchvision's model table (4.09 / 7.80 GMACs incl. the fc layer; 25.56 M / 44.55 M).
  //   MobileNetV2: Sandler et al. 2018, Table 4 (300 M MACs); torchvision 3.50 M parameters.
  //   EfficientNet: Tan & Le 2019, Table 2 ("FLOPS" there are MACs).
  //   ConvNeXt: Liu et al. 2022, Table 1 (ImageNet-1K, 224²; "FLOPs" there are MACs).
  const Published table[] = {
      {"resnet50", 4.09e9, 25.6e6, 0.03, "torchvision"},
      {"resnet101", 7.8e9, 44.5e6, 0.03, "torchvision"},
      {"mobilenet_v2", 300e6, 3.5e6, 0.03, "Sandler 2018 Table 4 / torchvision"},
      {"efficientnet_b0", 0.39e9, 5.3e6, 0.03, "Tan & Le 2019 Table 2"},
      {"efficientnet_b1", 0.70e9, 7.8e6, 0.03, "Tan & Le 2019 Table 2"},
      {"efficientnet_b2", 1.0e9, 9.2e6, 0.03, "Tan & Le 2019 Table 2"},
      {"efficientnet_b3", 1.8e9, 12e6, 0.03, "Tan & Le 2019 Table 2"},
      // B4 and B5: the paper's 4.2 B and 9.9 B sit 4.6% and 3.7% below what
      // their own architecture definition counts (4.39 and 10.27 GMACs, the
      // same figures torchvision's model table lists); see the next test.
      {"efficientnet_b4", 4.2e9, 19e6, 0.05, "Tan & Le 2019 Table 2"},
      {"efficientnet_b5", 9.9e9, 30e6, 0.04, "Tan & Le 2019 Table 2"},
      {"efficientnet_b6", 19e9, 43e6, 0.03, "Tan & Le 2019 Table 2"},
      {"efficientnet_b7", 37e9, 66e6, 0.03, "Tan & Le 2019 Table 2"},
      {"convnext_t", 4.5e9, 28.6e6, 0.03, "Liu 2022 Table 1 / torchvision"},
      {"convnext_s", 8.7e9, 50.2e6, 0.03, "Liu 2022 Table 1"},
      {"convnext_b", 15.4e9, 88.6e6, 0.03, "Liu 2022 Table 1"},
  };
  for (const Published& p : table) {
    const an::Network net = an::network_by_name(p.network);
    INFO(p.network << " (" << p.source << "): " << net.total_macs() / 1e9 << " GMACs vs " << p.macs / 1e9 << ", "
                   << net.total_params() / 1e6 << " M params vs " << p.params / 1e6);
    CHECK(net.batch == 1);
    CHECK(relative_error(net.total_macs(), p.macs) <= p.tolerance);
    CHECK(relative_error(net.total_params(), p.params) <= p.tolerance);
  }
}

TEST_CASE("exact counts: torchvision's per-layer totals of the same architectures", "[analysis][cpu]") {
  // torchvision counts conv and linear MACs layer by layer, as we do; its
  // parameter counts are exact integers.
  CHECK(an::resnet(50).total_params() == 25557032.0);
  CHECK(an::resnet(101).total_params() == 44549160.0);
  CHECK(an::mobilenet_v2(1.0).total_params() == 3504872.0);
  CHECK(an::efficientnet(0).total_params() == 5288548.0);
  CHECK(an::efficientnet(5).total_params() == 30389784.0);
  CHECK(an::efficientnet(7).total_params() == 66347960.0);
  CHECK(an::convnext("T").total_params() == 28589128.0);
  CHECK(relative_error(an::efficientnet(5).total_macs(), 10.27e9) < 0.005);
  CHECK(relative_error(an::efficientnet(7).total_macs(), 37.746e9) < 0.005);
  CHECK(relative_error(an::resnet(50).total_macs(), 4.089e9) < 0.005);
}

TEST_CASE("EfficientNet compound scaling: resolutions, rounding of filters and repeats", "[analysis][cpu]") {
  CHECK(an::efficientnet_scaling(0).resolution == 224);
  CHECK(an::efficientnet_scaling(5).resolution == 456);
  CHECK(an::efficientnet_scaling(7).resolution == 600);
  CHECK(an::efficientnet_round_filters(32, 1.6) == 48);    // 51.2 → 48 (within 10%)
  CHECK(an::efficientnet_round_filters(1280, 1.6) == 2048);
  CHECK(an::efficientnet_round_filters(16, 1.1) == 16);    // 17.6 → 16
  CHECK(an::efficientnet_round_filters(24, 1.4) == 32);    // 33.6 → 32
  CHECK(an::efficientnet_round_repeats(1, 2.2) == 3);
  CHECK(an::efficientnet_round_repeats(4, 2.2) == 9);      // 8.8 → 9
  CHECK(an::efficientnet_round_repeats(3, 1.0) == 3);

  const an::Network b5 = an::efficientnet(5);
  CHECK(b5.resolution == 456);
  const an::Layer& head = find_layer(b5, "head");
  CHECK(head.output.H == 15);   // 456 → 228 → 114 → 57 → 29 → 15 ("same" padding rounds up)
  CHECK(head.output.C == 2048);
}

TEST_CASE("rows follow the counting conventions (hand-computed)", "[analysis][cpu]") {
  const an::Network r50 = an::resnet(50);

  SECTION("a dense conv: ConvProblem's MACs, BN folded into a bias") {
    const an::Layer& conv1 = find_layer(r50, "conv1");
    CHECK(conv1.type == an::LayerType::dense);
    CHECK(conv1.output.H == 112);
    CHECK(conv1.macs == 112.0 * 112 * 64 * (7 * 7 * 3));
    CHECK(conv1.params == 64.0 * 7 * 7 * 3 + 2 * 64);  // weights + BN γ, β
    CHECK(conv1.weight_elems == 64.0 * 7 * 7 * 3 + 64);  // weights + folded bias
    CHECK(conv1.bytes == 2.0 * (224.0 * 224 * 3 + 112.0 * 112 * 64 + 64.0 * 147 + 64));
    convlab::ConvProblem p;
    p.H = p.W = 224, p.C = 3, p.K = 64, p.R = p.S = 7, p.stride = 2, p.pad = 3;
    CHECK(conv1.ops() == p.flops());  // the descriptor is the single source of FLOPs
  }
  SECTION("the residual add is fused into the last conv of a block: one more read") {
    const an::Layer& conv3 = find_layer(r50, "layer1.0.conv3");
    CHECK(conv3.type == an::LayerType::pointwise);
    const double in = 56.0 * 56 * 64, out = 56.0 * 56 * 256;
    CHECK(conv3.activation_elems == in + out + out);
    CHECK(conv3.bytes == 2.0 * (in + 2 * out + 256.0 * 64 + 256));
  }
  SECTION("pooling and the classifier") {
    const an::Layer& pool = find_layer(r50, "maxpool");
    CHECK(pool.type == an::LayerType::pooling);
    CHECK(pool.macs == 0);
    CHECK(pool.output.H == 56);
    CHECK(pool.bytes == 2.0 * (112.0 * 112 * 64 + 56.0 * 56 * 64));
    const an::Layer& fc = find_layer(r50, "fc");
    CHECK(fc.type == an::LayerType::linear);
    CHECK(fc.macs == 2048.0 * 1000);
    CHECK(fc.params == 2048.0 * 1000 + 1000);
  }
  SECTION("squeeze-excitation: an SE kernel and an element-wise scaling kernel") {
    const an::Network b0 = an::efficientnet(0);
    const an::Layer& se = find_layer(b0, "blocks.0.se");
    const an::Layer& scale = find_layer(b0, "blocks.0.scale");
    CHECK(se.type == an::LayerType::squeeze_excite);
    CHECK(scale.type == an::LayerType::elementwise);
    const double x = 112.0 * 112 * 32;
    CHECK(se.macs == 32.0 * 8 * 2);                        // 32 → 8 → 32 (8 = 32/4)
    CHECK(se.params == 32.0 * 8 + 8 + 8.0 * 32 + 32);
    CHECK(se.bytes == 2.0 * (x + 32 + se.params));          // tensor in, gate out, FC weights
    CHECK(scale.macs == 0);
    CHECK(scale.bytes == 2.0 * (x + 32 + x));               // tensor and gate in, tensor out
  }
  SECTION("depthwise, grouped and per-pixel linear layers are typed by their groups") {
    CHECK(find_layer(an::mobilenet_v2(), "features.2.depthwise").type == an::LayerType::depthwise);
    CHECK(find_layer(an::convnext("T"), "stages.0.0.pwconv1").type == an::LayerType::pointwise);
    CHECK(find_layer(an::convnext("T"), "stages.0.0.norm").type == an::LayerType::elementwise);
    // The network outlives the reference into it (a temporary would die at the end of the line).
    const an::Network convfirst = an::convfirstnet();
    const an::Layer& g = find_layer(convfirst, "stages.1.1.gconv");
    CHECK(g.type == an::LayerType::grouped);
    CHECK(g.input.C / g.groups == 8);  // group width 8
  }
}

TEST_CASE("at_batch rescales MACs and activations, not weights", "[analysis][cpu]") {
  const an::Network one = an::resnet(50);
  const an::Network many = an::at_batch(one, 128, 4.0);
  CHECK(many.batch == 128);
  CHECK(std::abs(many.total_macs() - 128 * one.total_macs()) <= 1e-9 * many.total_macs());
  CHECK(many.total_params() == one.total_params());
  const an::Layer& fc1 = find_layer(one, "fc");
  const an::Layer& fc128 = find_layer(many, "fc");
  CHECK(fc128.weight_elems == fc1.weight_elems);
  CHECK(fc128.bytes == 4.0 * (128 * fc1.activation_elems + fc1.weight_elems));
  CHECK(fc128.input.N == 128);
}

TEST_CASE("block fusion keeps the work and removes the internal traffic", "[analysis][cpu]") {
  for (const char* name : {"efficientnet_b0", "convnext_t", "convfirstnet", "resnet50"}) {
    const an::Network net = an::at_batch(an::network_by_name(name), 128, 2.0);
    const an::Network fused = an::block_fused(net);
    INFO(name);
    CHECK(fused.layers.size() < net.layers.size());
    CHECK(std::abs(fused.total_macs() - net.total_macs()) <= 1e-9 * net.total_macs());
    CHECK(fused.total_params() == net.total_params());
    CHECK(fused.total_bytes() < net.total_bytes());
  }
  // One MBConv block of B0 by hand: input and output once, weights once.
  const an::Network b0 = an::efficientnet(0);
  const an::Network fused = an::block_fused(b0);
  const an::Layer& block = find_layer(fused, "blocks.1");
  CHECK(block.type == an::LayerType::fused_block);
  CHECK(block.input.H == 112);
  CHECK(block.output.H == 56);
  CHECK(block.activation_elems == 112.0 * 112 * 16 + 56.0 * 56 * 24);
}

TEST_CASE("ConvFirstNet is configurable and validates its configuration", "[analysis][cpu]") {
  an::ConvFirstNetConfig config;
  config.widths = {32, 64};
  config.depths = {1, 2};
  config.head_channels = 0;
  const an::Network net = an::convfirstnet(config);
  // stem 224 → 112 → 56 at 32 channels; stage 2 opens with the BlurPool block.
  CHECK(find_layer(net, "stem.conv1").output.C == 32);
  CHECK(find_layer(net, "stages.1.0.blur").output.H == 28);
  CHECK(find_layer(net, "stages.1.0.shortcut.proj").output.C == 64);
  CHECK(find_layer(net, "stages.1.0.expand").output.C == 4 * 32);
  const an::Layer& project = find_layer(net, "stages.1.1.project");
  CHECK(project.activation_elems == 28.0 * 28 * 256 + 2 * 28.0 * 28 * 64);  // hidden in, output out, residual in

  config.widths = {30, 64};  // not a multiple of the group width
  CHECK(throws<std::invalid_argument>([&] { an::convfirstnet(config); }));
}

TEST_CASE("network_by_name accepts every listed name and rejects others with the list", "[analysis][cpu]") {
  for (const std::string& name : an::network_names()) CHECK(an::network_by_name(name).name == name);
  CHECK(an::network_by_name("EfficientNet-B5").name == "efficientnet_b5");
  CHECK(an::network_by_name("ConvNeXt-T").name == "convnext_t");
  bool threw = false;
  try {
    an::network_by_name("vgg16");
  } catch (const std::invalid_argument& e) {
    threw = true;
    const std::string message = e.what();
    CHECK(message.find("vgg16") != std::string::npos);
    for (const std::string& name : an::network_names()) CHECK(message.find(name) != std::string::npos);
  }
  CHECK(threw);
  CHECK(throws<std::invalid_argument>([&] { an::resnet(34); }));
  CHECK(throws<std::invalid_argument>([&] { an::efficientnet(8); }));
  CHECK(throws<std::invalid_argument>([&] { an::convnext("XL"); }));
}

TEST_CASE("data/accuracy.json: every entry is a known network with a cited source", "[analysis][cpu]") {
  // The sources' copy (this file sits at tests/analysis/), else one relative to
  // the working directory (a binary run away from the tree it was built in).
  const std::filesystem::path root = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
  std::filesystem::path file;
  for (const std::filesystem::path& candidate :
       {root / "data" / "accuracy.json", std::filesystem::path("data/accuracy.json"),
        std::filesystem::path("../data/accuracy.json")})
    if (std::filesystem::exists(candidate)) {
      file = candidate;
      break;
    }
  if (file.empty()) {
    std::cout << "CONVLAB-SKIP: data/accuracy.json not found near " << root.string() << " or the working directory\n";
    return;
  }
  const auto entries = an::load_published_accuracy(file.string());
  CHECK(entries.size() >= 14);
  for (const an::PublishedAccuracy& a : entries) {
    INFO(a.network);
    CHECK(!throws<std::exception>([&] { an::network_by_name(a.network); }));
    CHECK(a.top1 > 50.0);
    CHECK(a.top1 < 100.0);
    CHECK(!(a.table.empty()));
  }
}
