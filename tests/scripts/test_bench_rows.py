#!/usr/bin/env python3
"""Tests of bench/bench_rows.py: one line per benchmark row (variant, shape, median, cv), a clear
line and a non-zero status for a missing or malformed file.

Run directly or via ctest (scripts/bench_rows_unit).
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import bench_rows  # noqa: E402


def run(paths):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = bench_rows.main(paths)
    return status, out.getvalue(), err.getvalue()


class BenchRows(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_one_line_per_row_with_the_median_not_the_mean(self):
        rows = [{"name": "convfirst/gpu/10e_fused_cluster/n128_14x14_c256/manual_time", "real_time": 0.07,
                 "median_ms": 0.06784, "cv": 0.0131},
                {"name": "mbconv/gpu/11c_fused_store/n128_14x14_c80/manual_time", "real_time": 0.0699,
                 "time_unit": "ms", "cv": None},
                {"name": "gemm/cpu/03b_blocked/512x512x512_f32/real_time", "real_time": 2500.0, "time_unit": "us"},
                {"name": "mbconv/gpu/torch_inductor/n128_14x14_c80/manual_time", "real_time": 0.1155, "time_unit": "ms",
                 "cv": 0.005, "late": 2.0, "head_start_ms": 1.01, "host_ms": 0.482}]
        status, out, err = run([self.write("a.json", json.dumps({"benchmarks": rows}))])
        self.assertEqual(status, 0, err)
        lines = out.splitlines()
        self.assertEqual(len(lines), 4)
        self.assertEqual(lines[0].split(), ["10e_fused_cluster", "n128_14x14_c256", "0.0678", "cv", "0.013"])
        self.assertEqual(lines[1].split(), ["11c_fused_store", "n128_14x14_c80", "0.0699", "cv", "0.000"])
        self.assertEqual(lines[2].split(), ["03b_blocked", "512x512x512_f32", "2.5000", "cv", "0.000"])
        # a PyTorch row with a head start also says how many repetitions were late, and the head start
        self.assertEqual(lines[3].split(), ["torch_inductor", "n128_14x14_c80", "0.1155", "cv", "0.005",
                                            "late", "2", "head", "1.01"])

    def test_missing_and_malformed_files_say_so_and_fail(self):
        good = self.write("good.json", json.dumps({"benchmarks": []}))
        for bad in (os.path.join(self.dir.name, "absent.json"), self.write("bad.json", "{not json"),
                    self.write("list.json", "[1, 2]"), self.write("rows.json", '{"benchmarks": [1, 2]}'),
                    self.write("noname.json", '{"benchmarks": [{"real_time": 1.0}]}')):
            status, out, err = run([good, bad])
            self.assertEqual(status, 1, bad)
            self.assertEqual(out, "")
            self.assertEqual(len(err.splitlines()), 1, err)
            self.assertIn("no rows in", err)

    def test_no_arguments_is_a_usage_error(self):
        status, out, err = run([])
        self.assertEqual(status, 2)
        self.assertTrue(err.startswith("usage: "), err)


if __name__ == "__main__":
    unittest.main()
