#!/usr/bin/env python3
"""Tests of bench/merge_bench_json.py: joining the per-operation parts of one run, and
filing a later partial run into a machine's snapshot (--into ... --source ...).

Run directly or via ctest (scripts/merge_bench_json_unit).
"""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import merge_bench_json  # noqa: E402


def row(name, ms, **extra):
    return dict({"name": name + "/manual_time", "real_time": ms, "time_unit": "ms"}, **extra)


class MergeBenchJson(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, data):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            json.dump(data, f)
        return path

    def run_main(self, *argv):
        with contextlib.redirect_stderr(io.StringIO()):
            return merge_bench_json.main(list(argv))

    def test_later_parts_win_on_equal_names(self):
        a = self.write("a.json", {"context": {"git_rev": "r1"}, "benchmarks": [row("op/gpu/x/s", 2.0)]})
        b = self.write("b.json", {"context": {"git_rev": "r2"},
                                  "benchmarks": [row("op/gpu/x/s", 1.0), row("op/gpu/y/s", 3.0)]})
        out = os.path.join(self.dir, "out.json")
        self.assertEqual(self.run_main(out, a, b), 0)
        merged = json.load(open(out))
        self.assertEqual(merged["context"]["git_rev"], "r1")
        self.assertEqual([(r["name"], r["real_time"]) for r in merged["benchmarks"]],
                         [("op/gpu/x/s/manual_time", 1.0), ("op/gpu/y/s/manual_time", 3.0)])

    def test_into_replaces_appends_labels_and_skips_failures(self):
        snap = self.write("snap.json", {
            "context": {"git_rev": "old", "source_runs": {"earlier": {"date": "d0", "git_rev": "old"}}},
            "benchmarks": [row("op/gpu/x/s", 2.0, source_run="earlier"), row("op/gpu/z/s", 5.0, source_run="earlier")]})
        run = self.write("run.json", {
            "context": {"git_rev": "new", "date": "d1"},
            "benchmarks": [row("op/gpu/x/s", 1.0), row("op/gpu/y/s", 3.0),
                           row("op/gpu/bad/s", 0.0, error_occurred=True, error_message="wrong answer")]})
        self.assertEqual(self.run_main("--into", snap, "--source", "later", run), 0)
        merged = json.load(open(snap))
        got = {r["name"]: (r["real_time"], r["source_run"]) for r in merged["benchmarks"]}
        self.assertEqual(got, {"op/gpu/x/s/manual_time": (1.0, "later"),   # replaced in place
                               "op/gpu/z/s/manual_time": (5.0, "earlier"),  # kept
                               "op/gpu/y/s/manual_time": (3.0, "later")})   # appended; the failure is not
        self.assertEqual(merged["benchmarks"][0]["name"], "op/gpu/x/s/manual_time")
        self.assertEqual(merged["context"]["source_runs"],
                         {"earlier": {"date": "d0", "git_rev": "old"}, "later": {"date": "d1", "git_rev": "new"}})
        self.assertEqual(merged["context"]["git_rev"], "old")

    def test_into_refuses_an_unreadable_run(self):
        snap = self.write("snap.json", {"context": {}, "benchmarks": []})
        before = open(snap).read()
        self.assertEqual(self.run_main("--into", snap, "--source", "x", os.path.join(self.dir, "missing.json")), 2)
        self.assertEqual(open(snap).read(), before)


if __name__ == "__main__":
    unittest.main()
