// analysis/accuracy.hpp — published ImageNet-1K top-1 accuracies (the y axis
// of the efficiency-gap plot, Figure 1), read from data/accuracy.json. Every
// entry there names its source paper and table; nothing is measured here.
#pragma once

#include <string>
#include <vector>

namespace convlab::analysis {

struct PublishedAccuracy {
  std::string network;   // a network_by_name() name, e.g. "efficientnet_b5"
  double top1 = 0;       // percent
  int resolution = 0;    // evaluation input size
  std::string source;    // paper
  std::string table;     // where in it
  std::string protocol;  // e.g. "single 224 crop", "10-crop"
  std::string note;
};

// Reads the "networks" array of the file. Throws std::runtime_error on a
// missing file, malformed JSON or an entry without network / top1 / source.
std::vector<PublishedAccuracy> load_published_accuracy(const std::string& path);

}  // namespace convlab::analysis
