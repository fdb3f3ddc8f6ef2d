#!/usr/bin/env python3
"""Tests of bench/sass_lines.py: a profile's SASS rows matched to the right function of a
disassembly and summed per source line of the kernel's file.

Run directly or via ctest (scripts/sass_lines_unit).
"""
import contextlib
import io
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import sass_lines  # noqa: E402

# Two functions in nvdisasm -gi's format: `other` has the same length as `kern` but other opcodes.
# In `kern`, line 11 is the body of a lambda defined in the kernel (lines 10-14) and called at line 14.
# nvdisasm prints an inlining chain one level a line, the last line the kernel's own frame.
DISASSEMBLY = """
	.section	.text._Z5otheri,"ax",@progbits
	//## File "/dev/a/src/k.cu", line 3
        /*0000*/                   MOV R1, R2 ;
        /*0010*/                   MOV R1, R2 ;
        /*0020*/                   MOV R1, R2 ;
        /*0030*/                   MOV R1, R2 ;
        /*0040*/                   EXIT ;
	.section	.text._Z4kerni,"ax",@progbits
	//## File "/dev/a/src/k.cu", line 10
        /*0000*/                   LDC R1, c[0x0][0x28] ;
	//## File "/dev/a/src/helper.cuh", line 5 inlined at "/dev/a/src/k.cu", line 12
	//## File "/dev/a/src/k.cu", line 12
        /*0010*/                   FFMA R2, R3, R4, R2 ;
        /*0020*/               @!P0 BRA `(.L_x_1) ;
	//## File "/dev/a/src/k.cu", line 11 inlined at "/dev/a/src/k.cu", line 14
	//## File "/dev/a/src/k.cu", line 14
        /*0030*/                   IMAD R5, R6, R7, R5 ;
	//## File "/dev/a/src/helper.cuh", line 7 inlined at "/dev/a/src/helper.cuh", line 20
	//## File "/dev/a/src/helper.cuh", line 20 inlined at "/dev/a/src/k.cu", line 14
	//## File "/dev/a/src/k.cu", line 14
        /*0040*/                   EXIT ;
"""

# Nsight's rows: a kernel-name line, then the header; addresses are absolute, rows in any order.
PROFILE = '''"Kernel Name","kern"
"Address","Source","Instructions Executed","Warp Stall Sampling (All Samples)"
"0x7f0000000020","@!P0 BRA 0x7f0000000040","1,000","7"
"0x7f0000000000","LDC R1, c[0x0][0x28]","10","1"
"0x7f0000000010","FFMA R2, R3, R4, R2","1,000","20"
"0x7f0000000030","IMAD R5, R6, R7, R5","100","3"
"0x7f0000000040","EXIT","10","0"
'''


class SassLines(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.sass = self.write("k.sass", DISASSEMBLY)
        self.csv = self.write("sass.csv", PROFILE)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_main(self, *argv):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            rc = sass_lines.main(list(argv))
        return rc, out.getvalue()

    def test_picks_the_function_by_its_opcodes(self):
        rc, out = self.run_main(self.csv, self.sass)
        self.assertEqual(rc, 0)
        self.assertIn("function: _Z4kerni", out)
        self.assertIn("matched: 100.0 %", out)
        self.assertIn("instructions executed (warp level): 2120; stall samples: 31", out)

    def test_inlined_code_is_charged_to_its_call_site_in_the_kernel_file(self):
        _, out = self.run_main(self.csv, self.sass)
        rows = {line.split()[4]: line.split() for line in out.splitlines() if ":" in line and "%" in line}
        self.assertEqual(rows["k.cu:12"][0], "2000")  # the FFMA and the branch, both inlined from helper.cuh:5
        self.assertEqual(rows["k.cu:12"][3], "27")
        self.assertIn("(helper.cuh:5)", out)
        self.assertEqual(rows["k.cu:10"][0], "10")
        self.assertEqual(rows["k.cu:14"][0], "10")  # two levels of inlining: the outermost frame in k.cu
        self.assertEqual(rows["k.cu:11"][0], "100")  # a lambda of the kernel: its own line, not its call's
        self.assertNotIn("k.cu:3 ", out)  # the other function's line

    def test_file_option_charges_to_the_helper(self):
        _, out = self.run_main(self.csv, self.sass, "--file", "helper.cuh")
        self.assertIn("helper.cuh:5", out)
        self.assertIn("helper.cuh:20", out)  # outermost frame inside helper.cuh of the EXIT's chain

    def test_groups_gather_instructions_of_one_trip_count(self):
        _, out = self.run_main(self.csv, self.sass, "--groups", "5")
        groups = out.split("groups of instructions executed equally often")[1].splitlines()[2:]
        first = groups[0].split()
        self.assertEqual(first[:3], ["1000", "2", "2000"])  # the FFMA and the branch: one body
        self.assertIn("k.cu:12 (2)", groups[0])
        self.assertEqual(groups[1].split()[:3], ["100", "1", "100"])  # the lambda's line
        self.assertIn("k.cu:11 (1)", groups[1])
        third = groups[2].split()
        self.assertEqual(third[:3], ["10", "2", "20"])  # LDC and EXIT, on two lines
        self.assertIn("k.cu:10 (1)", groups[2])
        self.assertIn("k.cu:14 (1)", groups[2])
        self.assertEqual(len(groups), 3)

    def test_a_profile_of_another_length_matches_nothing(self):
        short = self.write("short.csv", "\n".join(PROFILE.splitlines()[:4]) + "\n")
        rc, _ = self.run_main(short, self.sass)
        self.assertEqual(rc, 1)


if __name__ == "__main__":
    unittest.main()
