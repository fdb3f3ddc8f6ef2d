#!/usr/bin/env python3
"""Tests of scripts/lesson_tables.py on a small fixture run (tests/scripts/fixture/).

Each test writes a lesson into a temporary folder, runs the script's main() on it with
--results pointing at the fixture, and reads back what it wrote. Run directly or via ctest
(scripts/lesson_tables_unit).
"""
import contextlib
import io
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import lesson_tables  # noqa: E402

FIXTURE = os.path.join(HERE, "fixture")
SHAPE = "op=gemm device=gpu shape=m64n64k64_f32"


def value(args, body="?"):
    return f"<!-- convlab:value {args} -->{body}<!-- /convlab:value -->"


class LessonTables(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.readme = os.path.join(self.dir, "README.md")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_script(self, text, *extra):
        with open(self.readme, "w") as f:
            f.write(text)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = lesson_tables.main(["--results", FIXTURE, "--lessons", self.readme, *extra])
        with open(self.readme) as f:
            return rc, f.read(), err.getvalue()

    def fill_one(self, args):
        rc, text, err = self.run_script("x " + value(f"{SHAPE} {args}") + " y\n")
        self.assertEqual(rc, 0, err)
        start = text.index("-->") + 3
        return text[start:text.index("<!-- /convlab:value")]

    def test_fields_round_as_the_table(self):
        self.assertEqual(self.fill_one("variant=03a_naive field=time_ms"), "2.000")  # us -> ms
        self.assertEqual(self.fill_one("variant=cublas field=time_ms"), "0.400")    # ns -> ms
        self.assertEqual(self.fill_one("variant=03b_fast field=gflops"), "1000.0")
        self.assertEqual(self.fill_one("variant=03b_fast field=tflops"), "1.0")
        self.assertEqual(self.fill_one("variant=03a_naive field=pct_peak"), "12.3")
        self.assertEqual(self.fill_one("variant=03a_naive field=gbs"), "40.0")
        self.assertEqual(self.fill_one("variant=03a_naive field=pct_roofline"), "50.0")
        self.assertEqual(self.fill_one("variant=03a_naive field=model_mb"), "3.0")
        self.assertEqual(self.fill_one("variant=03b_fast field=model_gbs"), "2.0")
        self.assertEqual(self.fill_one("variant=03a_naive field=peak_gflops"), "2025.0")
        self.assertEqual(self.fill_one("variant=03a_naive field=peak_tflops"), "2.0")
        self.assertEqual(self.fill_one("variant=03a_naive field=peak_gbs"), "4185.9")
        self.assertEqual(self.fill_one("variant=03a_naive field=intensity"), "6.25")
        self.assertEqual(self.fill_one("variant=03a_naive field=attainable_gflops"), "1000.0")
        self.assertEqual(self.fill_one("variant=03a_naive field=attainable_tflops"), "1.0")
        # 0.5 GFLOP (250 GFLOP/s for 2 ms) at 1000 GFLOP/s attainable: 500 us
        self.assertEqual(self.fill_one("variant=03a_naive field=floor_us"), "500.0")

    def test_ratios(self):
        self.assertEqual(self.fill_one("variant=03b_fast field=vs_first"), "4.00")
        self.assertEqual(self.fill_one("variant=03a_naive field=vs_first"), "1.00")
        self.assertEqual(self.fill_one("variant=03b_fast ratio_vs=cublas"), "0.80")
        self.assertEqual(self.fill_one("variant=03b_fast field=ratio ratio_vs=03a_naive"), "4.00")

    def test_value_equals_the_table_cell(self):
        table = f"<!-- convlab:results {SHAPE} -->\n<!-- /convlab:results -->\n"
        rc, text, _ = self.run_script(table + value(f"{SHAPE} variant=03b_fast field=time_ms") + "\n"
                                      + value(f"{SHAPE} variant=03b_fast ratio_vs=cublas") + "\n")
        self.assertEqual(rc, 0)
        row = next(line for line in text.splitlines() if line.startswith("| 03b_fast |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        self.assertIn(f"-->{cells[1]}<!--", text)                 # time column
        self.assertIn(f"-->{cells[-1].rstrip('x')}<!--", text)    # vs cublas column

    def test_check_finds_a_stale_value_and_a_fill_fixes_it(self):
        stale = "a " + value(f"{SHAPE} variant=03b_fast field=time_ms", "0.41") + " ms\n"
        rc, text, _ = self.run_script(stale, "--check")
        self.assertEqual(rc, 1)
        self.assertEqual(text, stale)  # --check never writes
        rc, text, _ = self.run_script(stale)
        self.assertEqual(rc, 0)
        self.assertIn("-->0.500<!--", text)
        self.assertTrue(text.endswith(" ms\n"))  # the text around the marker is kept
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(lesson_tables.main(["--results", FIXTURE, "--lessons", self.readme, "--check"]), 0)

    def test_missing_rows_fail_loudly(self):
        cases = {
            "variant=03z_missing field=time_ms": "no row 03z_missing",
            "variant=03b_fast field=speed": "unknown field",
            "variant=03b_fast": "missing field",
            "variant=03b_fast field=ratio": "ratio_vs",
            "variant=03b_fast ratio_vs=nothere": "ratio_vs",
            "variant=cublas field=pct_roofline": "no counter",
            "variant=cublas field=peak_gflops": "no counter",
            "variant=cublas field=floor_us": "no counter",
        }
        for args, message in cases.items():
            with self.subTest(args=args):
                text = value(f"{SHAPE} {args}", "7") + "\n"
                for extra in ((), ("--check",)):
                    rc, after, err = self.run_script(text, *extra)
                    self.assertEqual(rc, 1)
                    self.assertIn(message, err)
                    self.assertEqual(after, text)
        # An errored benchmark row is no row; a shape no run has fails too.
        rc, _, err = self.run_script(value("op=gemm device=gpu shape=m8n8k8_f32 variant=03b_fast field=time_ms") + "\n")
        self.assertEqual(rc, 1)
        self.assertIn("no committed run", err)

    def test_results_table_from_the_fixture(self):
        rc, text, _ = self.run_script(f"<!-- convlab:results {SHAPE} -->\nold\n<!-- /convlab:results -->\n")
        self.assertEqual(rc, 0)
        self.assertIn("| 03a_naive | 2.000 | 250.0 | 12.3 | 1.00x | 0.20x |", text)
        self.assertIn("| 03b_fast | 0.500 | 1000.0 | 49.4 | 4.00x | 0.80x |", text)
        self.assertIn("| cublas | 0.400 | 1250.0 | 61.7 | 5.00x | 1.00x |", text)
        self.assertIn("rev abc1234", text)
        self.assertNotIn("old", text)

    def test_bytes_columns_set_the_model_floor_beside_the_time(self):
        # 03a_naive: 0.5 GFLOP in 2 ms, 3 MB modelled; probe 2025.04 GFLOP/s, 4185.93 GB/s:
        # floor max(0.2469, 0.0007) ms = 0.247 ms, time 8.1x the floor. Rows without the
        # probe's peaks or a model say "-".
        rc, text, _ = self.run_script(f"<!-- convlab:results {SHAPE} bytes=1 -->\n<!-- /convlab:results -->\n")
        self.assertEqual(rc, 0)
        self.assertIn("| floor (ms, model) | x floor |", text)
        self.assertIn("| 03a_naive | 2.000 | 250.0 | 12.3 | 1.00x | 3.0 | 1.5 | 0.247 | 8.1x |", text)
        self.assertIn("| 03b_fast | 0.500 | 1000.0 | 49.4 | 4.00x | 1.0 | 2.0 | - | - |", text)
        self.assertIn("| cublas | 0.400 | 1250.0 | 61.7 | 5.00x | - | - | - | - |", text)


if __name__ == "__main__":
    unittest.main()
