// gpu/lib/phase_stamps.cu — the host half of gpu/lib/phase_stamps.cuh: one buffer of stamps per
// launch, and the one-line report of the phases' times over the CTAs; the same for a chunk trace.
#include "gpu/lib/phase_stamps.cuh"

#include <algorithm>
#include <utility>
#include <cstdio>
#include <cstdlib>

#include "core/device.hpp"

namespace convlab::gpu {
namespace {

bool env_on(const char* name) {
  const char* on = std::getenv(name);
  return on != nullptr && *on != '\0' && std::string(on) != "0";
}

// The median and the 90th percentile of d (sorted here); d not empty.
std::pair<double, double> median_p90(std::vector<double>& d) {
  std::sort(d.begin(), d.end());
  return {d[d.size() / 2], d[std::min(d.size() - 1, d.size() * 9 / 10)]};
}

}  // namespace

PhaseStamps::PhaseStamps(std::string kernel, int ctas, std::vector<std::string> names)
    : kernel_(std::move(kernel)), ctas_(ctas), names_(std::move(names)) {
  if (!env_on("CONVLAB_PHASE_STAMPS") || ctas_ <= 0) return;
  const std::size_t bytes = std::size_t(ctas_) * kinds() * sizeof(unsigned long long);
  stamps_ = static_cast<unsigned long long*>(device_malloc(bytes));
  device_memset(stamps_, 0, bytes);
}

PhaseStamps::~PhaseStamps() { device_free(stamps_); }

void PhaseStamps::report() const {
  if (stamps_ == nullptr) return;
  device_synchronize("phase stamps");
  const int k = kinds();
  std::vector<unsigned long long> s(std::size_t(ctas_) * k);
  copy_bytes(s.data(), Device::cpu, stamps_, Device::gpu, s.size() * sizeof(s[0]));
  const auto at = [&](int cta, int i) { return s[std::size_t(cta) * k + i]; };
  // A phase's time in each CTA (µs); a CTA missing a stamp (a kernel path that skips it) is left out.
  std::string line = kernel_ + " phases over " + std::to_string(ctas_) + " CTAs, µs median/max:";
  char buf[160];
  for (int i = 0; i + 1 < k; ++i) {
    std::vector<double> d;
    for (int c = 0; c < ctas_; ++c)
      if (at(c, i) != 0 && at(c, i + 1) != 0) d.push_back(double(at(c, i + 1)) - double(at(c, i)));
    if (d.empty()) continue;
    std::sort(d.begin(), d.end());
    std::snprintf(buf, sizeof buf, " %s %.2f/%.2f;", names_[i].c_str(), d[d.size() / 2] / 1e3, d.back() / 1e3);
    line += buf;
  }
  unsigned long long first_in = ~0ull, last_in = 0, first_out = ~0ull, last_out = 0;
  for (int c = 0; c < ctas_; ++c) {
    first_in = std::min(first_in, at(c, 0)), last_in = std::max(last_in, at(c, 0));
    first_out = std::min(first_out, at(c, k - 1)), last_out = std::max(last_out, at(c, k - 1));
  }
  std::snprintf(buf, sizeof buf, " entries spread %.2f, exits spread %.2f, first entry to last exit %.2f",
                double(last_in - first_in) / 1e3, double(last_out - first_out) / 1e3,
                double(last_out - first_in) / 1e3);
  line += buf;
  std::fprintf(stderr, "%s\n", line.c_str());
}

ChunkTrace::ChunkTrace(std::string kernel, int chunks, std::vector<std::vector<std::string>> roles,
                       std::vector<TraceLink> links)
    : kernel_(std::move(kernel)), chunks_(chunks), roles_(std::move(roles)), links_(std::move(links)) {
  for (const auto& r : roles_) events_ += int(r.size());
  if (!requested() || chunks_ <= 0 || events_ == 0) return;
  const std::size_t bytes = std::size_t(kTraceCtas) * chunks_ * events_ * sizeof(unsigned long long);
  trace_ = static_cast<unsigned long long*>(device_malloc(bytes));
  device_memset(trace_, 0, bytes);
}

ChunkTrace::~ChunkTrace() { device_free(trace_); }

bool ChunkTrace::requested() { return env_on("CONVLAB_CHUNK_TRACE"); }

void ChunkTrace::report() const {
  if (trace_ == nullptr) return;
  device_synchronize("chunk trace");
  std::vector<unsigned long long> t(std::size_t(kTraceCtas) * chunks_ * events_);
  copy_bytes(t.data(), Device::cpu, trace_, Device::gpu, t.size() * sizeof(t[0]));
  const auto at = [&](int cta, int c, int e) { return t[(std::size_t(cta) * chunks_ + c) * events_ + e]; };
  // The chunks in the loop's steady state: the first and the last one left out where there are four or more.
  const int c0 = chunks_ >= 4 ? 1 : 0, c1 = chunks_ >= 4 ? chunks_ - 1 : chunks_;
  const auto spans = [&](int from, int to, int lag) {  // event from of chunk c − lag to event to of chunk c
    std::vector<double> d;
    for (int cta = 0; cta < kTraceCtas; ++cta)
      for (int c = std::max(c0, lag); c < c1; ++c)
        if (at(cta, c - lag, from) != 0 && at(cta, c, to) != 0)
          d.push_back(double(at(cta, c, to)) - double(at(cta, c - lag, from)));
    return d;
  };
  std::fprintf(stderr, "%s chunk trace: %d CTAs, chunks %d..%d of %d; SM cycles, median / 90th percentile\n",
               kernel_.c_str(), kTraceCtas, c0, c1 - 1, chunks_);
  const auto line = [](const std::string& what, std::vector<double> d) {
    if (d.empty()) return;
    const auto [m, p] = median_p90(d);
    std::fprintf(stderr, "  %-44s %8.0f %8.0f\n", what.c_str(), m, p);
  };
  int first = 0;
  for (const auto& role : roles_) {
    line(role[0] + " (the role's chunk period)", spans(first, first, 1));
    for (int i = 1; i < int(role.size()); ++i) line("  " + role[i], spans(first + i - 1, first + i, 0));
    first += int(role.size());
  }
  for (const TraceLink& k : links_) line(k.name, spans(k.from, k.to, k.lag));
}

}  // namespace convlab::gpu
