// analysis/accuracy.cpp — reader of data/accuracy.json.
#include "analysis/accuracy.hpp"

#include <stdexcept>

#include "core/json.hpp"

namespace convlab::analysis {

std::vector<PublishedAccuracy> load_published_accuracy(const std::string& path) {
  const json::Value root = json::parse_file(path);
  const json::Value* list = root.find("networks");
  if (!list || list->kind != json::Value::Kind::array) throw std::runtime_error(path + ": no \"networks\" array");
  const auto text = [](const json::Value& entry, const char* key) {
    const json::Value* v = entry.find(key);
    return v && v->is_string() ? v->text : std::string();
  };
  std::vector<PublishedAccuracy> out;
  for (const json::Value& entry : list->items) {
    PublishedAccuracy a;
    a.network = text(entry, "network");
    a.source = text(entry, "source");
    a.table = text(entry, "table");
    a.protocol = text(entry, "protocol");
    a.note = text(entry, "note");
    const json::Value* top1 = entry.find("top1");
    const json::Value* res = entry.find("resolution");
    if (a.network.empty() || a.source.empty() || !top1 || !top1->is_number())
      throw std::runtime_error(path + ": every entry needs \"network\", \"top1\" and \"source\"");
    a.top1 = top1->number;
    a.resolution = res && res->is_number() ? int(res->number) : 0;
    out.push_back(a);
  }
  return out;
}

}  // namespace convlab::analysis
