#!/usr/bin/env python3
"""Tests of bench/call_stages.sh, the stages a device call script sources: the build under its
own limit, a stage's result files reaching $OUT, a stage stopped at its limit, the sanitizers
only when time is left, and the logs and summaries packed at the end. run_gpu.sh, cmake and
ninja are stubs.

Run directly or via ctest (scripts/call_stages_unit).
"""
import os
import subprocess
import tarfile
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

STUB_RUN_GPU = """#!/bin/bash
# what run_gpu.sh leaves in $OUT, by mode
printf 'convlab GPU run — stub, %s\\nstage      ok\\n  an indented detail line\\n' "$*" > "$OUT/summary.txt"
[[ -n ${STUB_SLEEP:-} ]] && sleep "$STUB_SLEEP"
case " $* " in
  *" --no-bench "*) echo '<testsuite tests="1" failures="0"/>' > "$OUT/gpu-tests.xml" ;;
  *" --no-tests "*) echo '{"benchmarks": []}' > "$OUT/bench-gpu.json" ;;
  *" --sanitize-only "*) echo "memcheck   ok   1s  tests=$CONVLAB_SANITIZE_TESTS timeout=$CONVLAB_SANITIZE_TIMEOUT" > "$OUT/sanitize.log" ;;
esac
echo "stub log" > "$OUT/logs.tar.gz"
"""


class CallStages(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.out = os.path.join(self.tmp.name, "out")
        self.stages = os.path.join(self.tmp.name, "stages")
        self.bin = os.path.join(self.tmp.name, "bin")
        for d in (self.out, self.stages, self.bin):
            os.makedirs(d)
        self.write_exe(os.path.join(self.bin, "run_gpu.sh"), STUB_RUN_GPU)
        self.write_exe(os.path.join(self.bin, "cmake"), "#!/bin/bash\necho stub cmake\n")
        self.write_exe(os.path.join(self.bin, "ninja"), "#!/bin/bash\necho stub ninja; exit ${STUB_NINJA_STATUS:-0}\n")

    @staticmethod
    def write_exe(path, text):
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o755)

    def call(self, body, **env):
        script = "source bench/call_stages.sh\n" + textwrap.dedent(body)
        full_env = dict(os.environ, OUT=self.out, CALL_RUN_GPU=os.path.join(self.bin, "run_gpu.sh"),
                        CALL_STAGES_DIR=self.stages, PATH=self.bin + os.pathsep + os.environ["PATH"], **env)
        return subprocess.run(["bash", "-c", script], cwd=ROOT, env=full_env, capture_output=True, text=True,
                              timeout=60)

    def test_build_logs_to_out_and_reports_a_failure(self):
        ok = self.call("call_build 30 && echo BUILT")
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertIn("BUILT", ok.stdout)
        with open(os.path.join(self.out, "build.log")) as f:
            self.assertIn("stub ninja", f.read())
        failed = self.call("call_build 30 || { echo STOPPED; exit 4; }", STUB_NINJA_STATUS="1")
        self.assertEqual(failed.returncode, 4)
        self.assertIn("did not finish", failed.stdout)

    def test_stages_bring_their_files_to_out_and_finish_packs_them(self):
        r = self.call("""
            call_stage tests 20 --no-bench --only 'x'
            call_stage bench 20 --no-tests --only 'x'
            call_finish
        """)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.isfile(os.path.join(self.out, "gpu-tests.xml")))
        self.assertTrue(os.path.isfile(os.path.join(self.out, "bench-gpu.json")))
        self.assertFalse(os.path.exists(os.path.join(self.out, "sanitize.log")))
        with open(os.path.join(self.out, "summaries.txt")) as f:
            summaries = f.read()
        self.assertEqual(summaries.count("convlab GPU run"), 2)
        self.assertNotIn("indented detail", summaries)
        with tarfile.open(os.path.join(self.out, "logs.tar.gz")) as tar:
            names = set(tar.getnames())
        self.assertTrue({"call-tests/run.log", "call-tests/summary.txt", "call-bench/logs.tar.gz"} <= names, names)
        self.assertLessEqual(len(os.listdir(self.out)), 8)

    def test_a_stage_past_its_limit_is_stopped_and_says_so(self):
        r = self.call("call_stage tests 1 --no-bench; echo status=$?", STUB_SLEEP="5")
        self.assertIn("status=124", r.stdout)
        self.assertIn("stopped at its limit of 1s", r.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.out, "gpu-tests.xml")))

    def test_sanitizers_run_only_with_time_left_and_get_the_tests(self):
        r = self.call("call_sanitize 'convfirst/gpu/10e_fused_cluster'", CALL_LIMIT="30")
        self.assertIn("not run", r.stdout)
        self.assertFalse(os.path.exists(os.path.join(self.out, "sanitize.log")))
        r = self.call("call_sanitize 'convfirst/gpu/10e_fused_cluster'; call_finish", CALL_LIMIT="200")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.out, "sanitize.log")) as f:
            log = f.read()
        self.assertIn("tests=convfirst/gpu/10e_fused_cluster", log)
        self.assertRegex(log, r"timeout=1[78]\d")  # about 200 − 15 s: what is left, not a fixed figure
        self.assertIn("memcheck", r.stdout)


if __name__ == "__main__":
    unittest.main()
