#!/usr/bin/env python3
"""The PyTorch bench scripts (bench/convfirst_torch.py, mbconv_torch.py, sdpa_torch.py,
efficiency_gap.py) refuse a malformed or absurdly large request with one line and exit status 2,
before they need PyTorch: so these run on any machine, with or without torch.

Run directly or via ctest (scripts/torch_scripts_input).
"""
import os
import subprocess
import sys
import unittest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench")

# (script, arguments, what its one line must say)
CASES = [
    ("convfirst_torch.py", ["--shapes", "2,7,7,8,6,3,1,0.25,8"], "expected N,H,W,C,hidden,Cout,stride"),
    ("convfirst_torch.py", ["--shapes", "2,7,7,8,32,8,1.5"], "are integers"),
    ("convfirst_torch.py", ["--shapes", "2,7,7,8,32,8,3"], "stride 1 or 2"),
    ("convfirst_torch.py", ["--shapes", "2,7,7,0,32,8,1"], "sizes above 0"),
    ("convfirst_torch.py", ["--shapes", "99999,999,999,64,256,64,1"], "elements (at most"),
    ("mbconv_torch.py", ["--shapes", "2,7,7,8,6,3,1,x,8"], "se a number"),
    ("mbconv_torch.py", ["--shapes", "2,7,7,8,6,4,1,0.25,8"], "bad shape"),
    ("mbconv_torch.py", ["--shapes", "99999,999,999,64,6,3,1,0.25,64"], "elements (at most"),
    ("sdpa_torch.py", ["--shapes", "1,2,128,64,x,f16"], "are integers"),
    ("sdpa_torch.py", ["--shapes", "0,2,128,64,0,f16"], "above 0"),
    ("sdpa_torch.py", ["--shapes", "1,2,128,64,0,f99"], "with dtype f16, bf16 or f32"),
    ("sdpa_torch.py", ["--shapes", "9999,999,99999,128,0,f16"], "elements (at most"),
    ("efficiency_gap.py", ["--batch", "0"], "must be at least 1"),
    ("efficiency_gap.py", ["--batch", "100000000"], "too large"),
    ("efficiency_gap.py", ["--networks", "nope"], "unknown network"),
]


class BadInput(unittest.TestCase):
    def test_one_line_and_status_2(self):
        for script, args, says in CASES:
            with self.subTest(script=script, args=args):
                r = subprocess.run([sys.executable, os.path.join(BENCH, script), "--out", os.devnull, *args],
                                   capture_output=True, text=True, timeout=60)
                # argparse's errors print the usage first; the message is the last line
                lines = r.stderr.strip().splitlines()
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertTrue(lines and says in lines[-1], r.stderr)
                self.assertNotIn("Traceback", r.stderr)
                if not lines[-1].startswith(f"{script}: error:"):  # not argparse's: one line only
                    self.assertEqual(len(lines), 1, r.stderr)


if __name__ == "__main__":
    unittest.main()
