// analysis/network.cpp — totals, rebatching and block fusion of layer tables.
#include "analysis/network.hpp"

#include <stdexcept>

namespace convlab::analysis {

const char* layer_type_name(LayerType type) {
  switch (type) {
    case LayerType::dense: return "dense";
    case LayerType::grouped: return "grouped";
    case LayerType::depthwise: return "depthwise";
    case LayerType::pointwise: return "pointwise";
    case LayerType::linear: return "linear";
    case LayerType::pooling: return "pooling";
    case LayerType::squeeze_excite: return "SE";
    case LayerType::elementwise: return "elementwise";
    case LayerType::fused_block: return "fused_block";
  }
  return "?";
}

std::string shape_string(const ActivationShape& s) {
  return std::to_string(s.N) + "x" + std::to_string(s.H) + "x" + std::to_string(s.W) + "x" + std::to_string(s.C);
}

double Network::total_macs() const {
  double sum = 0;
  for (const Layer& l : layers) sum += l.macs;
  return sum;
}

double Network::total_params() const {
  double sum = 0;
  for (const Layer& l : layers) sum += l.params;
  return sum;
}

double Network::total_bytes() const {
  double sum = 0;
  for (const Layer& l : layers) sum += l.bytes;
  return sum;
}

Network at_batch(const Network& network, int batch, double bytes_per_element) {
  if (batch <= 0) throw std::invalid_argument("at_batch: batch must be positive");
  if (!(bytes_per_element > 0)) throw std::invalid_argument("at_batch: bytes_per_element must be positive");
  Network out = network;
  const double scale = double(batch) / double(network.batch);
  out.batch = batch;
  out.bytes_per_element = bytes_per_element;
  for (Layer& l : out.layers) {
    l.input.N = batch;
    l.output.N = batch;
    l.macs *= scale;                // every MAC belongs to one image
    l.activation_elems *= scale;    // every activation element belongs to one image
    l.bytes = (l.activation_elems + l.weight_elems) * bytes_per_element;  // weights: once per batch
  }
  return out;
}

Network block_fused(const Network& network) {
  Network out = network;
  out.layers.clear();
  const std::vector<Layer>& in = network.layers;
  for (std::size_t i = 0; i < in.size();) {
    if (in[i].block.empty()) {
      out.layers.push_back(in[i]);
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < in.size() && in[end].block == in[i].block) ++end;
    if (end - i == 1) {  // a one-kernel block is already fused
      out.layers.push_back(in[i]);
      i = end;
      continue;
    }
    Layer fused;
    fused.name = in[i].block;
    fused.type = LayerType::fused_block;
    fused.block = in[i].block;
    fused.input = in[i].input;        // every builder starts a block with a kernel reading its input
    fused.output = in[end - 1].output;
    fused.R = fused.S = 0;            // no single kernel extent
    const int downsampling = fused.input.H / fused.output.H;  // 2 for a stride-2 block
    fused.stride = downsampling > 1 ? downsampling : 1;
    fused.groups = 0;
    for (std::size_t j = i; j < end; ++j) {
      fused.macs += in[j].macs;
      fused.params += in[j].params;
      fused.weight_elems += in[j].weight_elems;
    }
    // Block input read once (it also feeds the shortcut), block output written once.
    fused.activation_elems = fused.input.elems() + fused.output.elems();
    fused.bytes = (fused.activation_elems + fused.weight_elems) * network.bytes_per_element;
    out.layers.push_back(fused);
    i = end;
  }
  return out;
}

}  // namespace convlab::analysis
