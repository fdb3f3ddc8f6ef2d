// grading/report.cpp — report.json, report.csv and report.html (see report.hpp).
#include "grading/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "core/json.hpp"

namespace convlab::grading {
namespace {

namespace json = convlab::json;

std::string num_or_null(double v, int digits = 6) { return v >= 0 && std::isfinite(v) ? json::number(v, digits) : "null"; }

std::string fixed(double v, int decimals) {
  if (!(v >= 0) || !std::isfinite(v)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

class Object {
 public:
  Object& raw(const char* key, const std::string& value) {
    text_ += (text_.size() > 1 ? ", " : "") + json::quote(key) + ": " + value;
    return *this;
  }
  Object& str(const char* key, const std::string& s) { return raw(key, json::quote(s)); }
  Object& num(const char* key, double v) { return raw(key, num_or_null(v)); }
  Object& integer(const char* key, long long v) { return raw(key, std::to_string(v)); }
  Object& boolean(const char* key, bool b) { return raw(key, b ? "true" : "false"); }
  std::string done() const { return text_ + "}"; }

 private:
  std::string text_ = "{";
};

std::string array(const std::vector<std::string>& items, bool quote_items) {
  std::string a = "[";
  for (std::size_t i = 0; i < items.size(); ++i) a += (i ? ", " : "") + (quote_items ? json::quote(items[i]) : items[i]);
  return a + "]";
}

std::string table_json(const TableResult& t) {
  return Object()
      .str("status", t.status).integer("shapes", t.shapes).integer("passed", t.passed).integer("failed", t.failed)
      .integer("unsupported_required", t.unsupported_required).integer("unsupported_optional", t.unsupported_optional)
      .str("process", t.process)
      .raw("first_failure", t.fail_spec.empty() && t.fail_message.empty()
                                ? "null"
                                : Object().str("spec", t.fail_spec).integer("seed", (long long)t.fail_seed)
                                      .str("where", t.fail_where).str("error", t.fail_message).done())
      .str("replay", t.replay).done();
}

std::string timing_json(const TimingResult& t) {
  return Object()
      .str("status", t.status).str("message", t.message).str("process", t.process).str("spec", t.spec)
      .integer("seed", (long long)t.seed).num("median_ms", t.median_ms).num("p10_ms", t.p10_ms)
      .num("p90_ms", t.p90_ms).num("min_ms", t.min_ms).num("spread", t.spread).integer("reps", t.reps)
      .boolean("converged", t.converged).num("cpu_per_wall", t.cpu_per_wall).str("warning", t.warning)
      .num("flops", t.flops).num("min_bytes", t.min_bytes).num("gflops", t.gflops).num("pct_peak", t.pct_peak)
      .num("peak_gflops", t.peak_gflops).str("threads", t.threads).str("device", t.device).str("dtype", t.dtype)
      .str("replay", t.replay).done();
}

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string table_cell(const TableResult& t) {
  if (t.status == "not run" || t.status == "none") return "-";
  std::string s = std::to_string(t.passed) + "/" + std::to_string(t.shapes);
  return t.status == "pass" ? s : s + " " + t.status;
}

std::string first_failure(const SubmissionResult& s) {
  const VariantResult* v = s.row_variant();
  if (!v) return "";
  for (const TableResult* t : {&v->public_tests, &v->hidden_tests})
    if (t->status != "pass" && t->status != "not run" && t->status != "none")
      return std::string(t == &v->public_tests ? "public: " : "hidden: ") + t->fail_spec +
             (t->fail_where.empty() ? "" : " at " + t->fail_where) + ": " + t->fail_message;
  if (v->timing.status != "ok" && v->timing.status != "not run") return "timing: " + v->timing.message;
  return "";
}

}  // namespace

std::string SubmissionResult::replay() const {
  if (!built) return build_replay;
  const VariantResult* v = row_variant();
  if (!v) return "";
  if (v->public_tests.status != "pass" && !v->public_tests.replay.empty()) return v->public_tests.replay;
  if (v->hidden_tests.status != "pass" && v->hidden_tests.status != "none" && !v->hidden_tests.replay.empty())
    return v->hidden_tests.replay;
  if (v->timing.status != "ok" && !v->timing.replay.empty()) return v->timing.replay;
  return "";
}

void write_json(const Report& r, const std::string& path) {
  std::vector<std::string> baselines, submissions;
  for (const BaselineResult& b : r.baselines)
    baselines.push_back(Object().str("role", b.role).str("id", b.id).num("median_ms", b.median_ms)
                            .num("gflops", b.gflops).num("pct_peak", b.pct_peak).num("drift", b.drift)
                            .raw("before", timing_json(b.before)).raw("after", timing_json(b.after)).done());
  for (const SubmissionResult& s : r.submissions) {
    std::vector<std::string> variants;
    for (const VariantResult& v : s.variants)
      variants.push_back(Object().str("id", v.id).str("name", v.name).str("threads", v.threads)
                             .raw("public_tests", table_json(v.public_tests))
                             .raw("hidden_tests", table_json(v.hidden_tests)).raw("timing", timing_json(v.timing))
                             .raw("blocked_writes", array(v.blocked_writes, true)).done());
    const VariantResult* row = s.row_variant();
    submissions.push_back(
        Object().str("name", s.name).str("dir", s.dir).integer("rank", s.rank).str("verdict", s.verdict)
            .raw("flags", array(s.flags, true)).str("summary", s.summary).boolean("builds", s.built)
            .str("build_process", s.build_process).str("build_log", s.build_log).str("variant", row ? row->id : "")
            .raw("public_tests", row ? table_json(row->public_tests) : "null")
            .raw("hidden_tests", row ? table_json(row->hidden_tests) : "null")
            .num("median_ms", row ? row->timing.median_ms : -1).num("spread", row ? row->timing.spread : -1)
            .num("gflops", row ? row->timing.gflops : -1).num("pct_peak", row ? row->timing.pct_peak : -1)
            .num("speedup_over_start", s.speedup_over_start).num("ratio_to_best", s.ratio_to_best)
            .str("timing_warning", row ? row->timing.warning : "").str("replay", s.replay())
            .raw("notes", array(s.notes, true)).raw("variants", array(variants, false)).done());
  }
  const std::string text =
      Object().str("title", r.title).str("created_utc", r.created_utc).str("command", r.command_line)
          .str("git_rev", r.git_rev).str("op", r.op).str("device", r.device).str("start", r.start_id)
          .str("best", r.best_id).str("shape", r.shape).integer("seed", (long long)r.seed)
          .str("hidden_file", r.hidden_file).integer("public_shapes", r.public_shapes)
          .integer("hidden_shapes", r.hidden_shapes).raw("probe", r.probe_json.empty() ? "null" : r.probe_json)
          .str("probe_summary", r.probe_summary).num("load_at_start", r.load_at_start).integer("cores", r.cores)
          .raw("warnings", array(r.warnings, true)).raw("baselines", array(baselines, false))
          .raw("submissions", array(submissions, false)).done();
  write_file(path, text + "\n");
}

void write_csv(const Report& r, const std::string& path) {
  std::string t =
      "rank,submission,verdict,flags,variant,builds,public_tests,hidden_tests,first_failure,median_ms,spread_pct,"
      "gflops,pct_peak,speedup_over_start,replay\n";
  for (const SubmissionResult& s : r.submissions) {
    const VariantResult* v = s.row_variant();
    std::string flags;
    for (const std::string& f : s.flags) flags += (flags.empty() ? "" : " ") + f;
    const std::vector<std::string> cells = {
        s.rank ? std::to_string(s.rank) : "", s.name, s.verdict, flags, v ? v->id : "", s.built ? "yes" : "no",
        v ? table_cell(v->public_tests) : "-", v ? table_cell(v->hidden_tests) : "-", first_failure(s),
        v ? fixed(v->timing.median_ms, 4) : "", v ? fixed(100 * v->timing.spread, 1) : "",
        v ? fixed(v->timing.gflops, 2) : "", v ? fixed(v->timing.pct_peak, 1) : "", fixed(s.speedup_over_start, 2),
        s.replay()};
    for (std::size_t i = 0; i < cells.size(); ++i) t += (i ? "," : "") + csv_cell(cells[i]);
    t += "\n";
  }
  write_file(path, t);
}

void write_html(const Report& r, const std::string& path) {
  // The chart: one horizontal bar per ranked submission and per baseline, GFLOP/s.
  struct Bar {
    std::string label;
    double gflops;
    std::string kind;  // "student" | "baseline"
  };
  std::vector<Bar> bars;
  for (const BaselineResult& b : r.baselines)
    if (b.gflops > 0) bars.push_back({b.role + ": " + b.id, b.gflops, "baseline"});
  for (const SubmissionResult& s : r.submissions)
    if (s.rank > 0) bars.push_back({"#" + std::to_string(s.rank) + " " + s.name, s.row_variant()->timing.gflops, "student"});
  std::sort(bars.begin(), bars.end(), [](const Bar& a, const Bar& b) { return a.gflops > b.gflops; });
  double top = 0;
  for (const Bar& b : bars) top = std::max(top, b.gflops);
  const int label_w = 300, bar_w = 520, row_h = 26, pad = 30;
  const int height = pad * 2 + row_h * int(std::max<std::size_t>(bars.size(), 1));
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(label_w + bar_w + 90) +
                    "\" height=\"" + std::to_string(height) + "\" role=\"img\" aria-label=\"GFLOP/s per submission\">";
  svg += "<text x=\"" + std::to_string(label_w) + "\" y=\"18\" class=\"axis\">GFLOP/s on " + html_escape(r.shape) +
         " (median)</text>";
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const int y = pad + int(i) * row_h;
    const int w = top > 0 ? std::max(1, int(bar_w * b.gflops / top)) : 1;
    svg += "<text x=\"" + std::to_string(label_w - 8) + "\" y=\"" + std::to_string(y + 17) +
           "\" text-anchor=\"end\" class=\"label\">" + html_escape(b.label) + "</text>";
    svg += "<rect class=\"bar " + b.kind + "\" x=\"" + std::to_string(label_w) + "\" y=\"" + std::to_string(y + 3) +
           "\" width=\"" + std::to_string(w) + "\" height=\"" + std::to_string(row_h - 6) + "\"/>";
    svg += "<text x=\"" + std::to_string(label_w + w + 6) + "\" y=\"" + std::to_string(y + 17) + "\" class=\"value\">" +
           fixed(b.gflops, 2) + "</text>";
  }
  if (bars.empty())
    svg += "<text x=\"" + std::to_string(label_w) + "\" y=\"" + std::to_string(pad + 17) +
           "\" class=\"label\">nothing was timed</text>";
  svg += "</svg>";

  std::string h = R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>)" + html_escape(r.title) + R"(</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1b1b1b; }
h1 { font-size: 22px; margin: 0 0 4px; }
.meta { color: #555; margin: 2px 0; }
.warn { background: #fff4d6; border-left: 4px solid #e0a100; padding: 6px 10px; margin: 8px 0; }
table { border-collapse: collapse; margin-top: 16px; }
th, td { border-bottom: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.ranked td.verdict { color: #176f2c; font-weight: 600; }
tr.failed td.verdict { color: #b3261e; font-weight: 600; }
code { font-size: 12px; background: #f6f6f6; padding: 1px 3px; word-break: break-all; }
table.rows { width: 100%; } td.detail { overflow-wrap: anywhere; min-width: 22em; }
svg .bar.student { fill: #3867d6; } svg .bar.baseline { fill: #9aa0a6; }
svg text { font: 12px system-ui, sans-serif; } svg .axis { fill: #555; }
</style></head><body>
)";
  h += "<h1>" + html_escape(r.title) + "</h1>\n";
  h += "<p class=\"meta\">" + html_escape(r.op) + " on " + html_escape(r.device) + "; start rung <b>" +
       html_escape(r.start_id) + "</b>" + (r.best_id.empty() ? "" : ", best rung <b>" + html_escape(r.best_id) + "</b>") +
       "; timed on <code>" + html_escape(r.shape) + "</code>; seed " + std::to_string(r.seed) + "; " +
       std::to_string(r.public_shapes) + " public and " + std::to_string(r.hidden_shapes) + " hidden shapes.</p>\n";
  h += "<p class=\"meta\">Machine: " + html_escape(r.probe_summary) + ". Graded " + html_escape(r.created_utc) +
       (r.git_rev.empty() ? "" : " at revision " + html_escape(r.git_rev)) + ".</p>\n";
  for (const std::string& w : r.warnings) h += "<p class=\"warn\">" + html_escape(w) + "</p>\n";
  h += "<h2>Speed</h2>\n" + svg + "\n";
  h += "<h2>Baselines (same run)</h2>\n<table><tr><th>role</th><th>rung</th><th>median ms</th><th>spread</th>"
       "<th>GFLOP/s</th><th>% peak</th><th>drift first→last</th></tr>\n";
  for (const BaselineResult& b : r.baselines)
    h += "<tr><td>" + html_escape(b.role) + "</td><td>" + html_escape(b.id) + "</td><td class=\"num\">" +
         fixed(b.median_ms, 4) + "</td><td class=\"num\">" + fixed(100 * b.before.spread, 1) + "%</td><td class=\"num\">" +
         fixed(b.gflops, 2) + "</td><td class=\"num\">" + fixed(b.pct_peak, 1) + "</td><td class=\"num\">" +
         fixed(100 * b.drift, 1) + "%</td></tr>\n";
  h += "</table>\n<h2>Submissions</h2>\n<table class=\"rows\"><tr><th>rank</th><th>submission</th><th>verdict</th><th>builds</th>"
       "<th>public</th><th>hidden</th><th>median ms</th><th>spread</th><th>GFLOP/s</th><th>% peak</th>"
       "<th>speed-up over start</th><th>first failure / notes</th></tr>\n";
  for (const SubmissionResult& s : r.submissions) {
    const VariantResult* v = s.row_variant();
    std::string detail = html_escape(first_failure(s).empty() ? s.summary : first_failure(s));
    if (v && !v->timing.warning.empty()) detail += "<br><i>timing: " + html_escape(v->timing.warning) + "</i>";
    if (!s.replay().empty()) detail += "<br>replay: <code>" + html_escape(s.replay()) + "</code>";
    h += std::string("<tr class=\"") + (s.rank ? "ranked" : "failed") + "\"><td class=\"num\">" +
         (s.rank ? std::to_string(s.rank) : "") + "</td><td>" + html_escape(s.name) +
         (v ? "<br><small>" + html_escape(v->name) + "</small>" : "") + "</td><td class=\"verdict\">" +
         html_escape(s.verdict) + "</td><td>" + (s.built ? "yes" : "no") + "</td><td>" +
         html_escape(v ? table_cell(v->public_tests) : "-") + "</td><td>" +
         html_escape(v ? table_cell(v->hidden_tests) : "-") + "</td><td class=\"num\">" +
         (v ? fixed(v->timing.median_ms, 4) : "") + "</td><td class=\"num\">" +
         (v && v->timing.spread >= 0 ? fixed(100 * v->timing.spread, 1) + "%" : "") + "</td><td class=\"num\">" +
         (v ? fixed(v->timing.gflops, 2) : "") + "</td><td class=\"num\">" + (v ? fixed(v->timing.pct_peak, 1) : "") +
         "</td><td class=\"num\">" + (s.speedup_over_start > 0 ? fixed(s.speedup_over_start, 2) + "×" : "") +
         "</td><td class=\"detail\">" + detail + "</td></tr>\n";
  }
  h += "</table>\n<p class=\"meta\">Command: <code>" + html_escape(r.command_line) + "</code></p>\n</body></html>\n";
  write_file(path, h);
}

}  // namespace convlab::grading
