#!/usr/bin/env python3
"""Tests of bench/call_stages.sh, the stages a device call script sources: the build under its
own limit, a stage's result files reaching $OUT, a stage stopped at its limit, the sanitizers
only when time is left, and the logs and summaries packed at the end. run_gpu.sh, cmake and
ninja are stubs. And of bench/run_gpu.sh under a caller's `timeout`: the build it started stops
with it, and summary.txt names the stage cut short (cmake and ninja stubbed).

Run directly or via ctest (scripts/call_stages_unit).
"""
import os
import shutil
import subprocess
import tarfile
import tempfile
import textwrap
import time
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
        self.write_exe(os.path.join(self.bin, "cmake"), "#!/bin/bash\necho stub cmake \"$@\"\n")
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
            log = f.read()
        self.assertIn("stub ninja", log)
        self.assertRegex(log, r"-DCONVLAB_GPU_ONLY=(\s|$)")  # every GPU source unless a call says otherwise
        self.call("call_build 30", CALL_GPU_ONLY="gpu/(lib|mbconv)/")
        with open(os.path.join(self.out, "build.log")) as f:
            self.assertIn("-DCONVLAB_GPU_ONLY=gpu/(lib|mbconv)/", f.read())
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

    def test_ncu_times_run_natural_and_flushed_and_print_the_kernels_lines(self):
        stub = os.path.join(self.bin, "ncu")
        self.write_exe(stub, """#!/bin/bash
echo '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
echo "\\"0\\",\\"1\\",\\"convlab_bench\\",\\"h\\",\\"stub_kernel\\",\\"1\\",\\"7\\",\\"(256, 1, 1)\\",\\"(396, 1, 1)\\",\\"0\\",\\"9.0\\",\\"Command line profiler metrics\\",\\"gpu__time_duration.sum\\",\\"usecond\\",\\"22.11\\""
echo "args: $*"
""")
        row = "mbconv/gpu/11c_fused_store/n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16"
        r = self.call(f"call_ncu_times {row} 'a_kernel|b_kernel'", CALL_NCU=stub, CALL_LIMIT="200")
        self.assertEqual(r.returncode, 0, r.stderr)
        name = "11c_fused_store-n128_14x14_c80_e6_k3_s1_se25_co80_silu_f16"
        for cc in ("none", "all"):
            with open(os.path.join(self.out, f"ncu-{name}-{cc}.csv")) as f:
                text = f.read()
            self.assertIn(f"--cache-control {cc} ", text)
            self.assertIn(f"--benchmark_filter=^{row} ", text)
            self.assertIn("--kernel-name regex:a_kernel|b_kernel ", text)
            self.assertIn(f"{name} {cc}: status 0", r.stdout)
        self.assertEqual(r.stdout.count("stub_kernel | gpu__time_duration.sum | 22.11\n"), 2, r.stdout)
        # a second rung at the same shape keeps its own files
        other = row.replace("11c_fused_store", "11r_store_walk")
        self.call(f"call_ncu_times {other} 'a_kernel'", CALL_NCU=stub, CALL_LIMIT="200")
        self.assertEqual(len([f for f in os.listdir(self.out) if f.startswith("ncu-")]), 4)
        # too little time left: neither runs, and the call says so
        short = self.call(f"call_ncu_times {row} 'a_kernel'", CALL_NCU=stub, CALL_LIMIT="10")
        self.assertEqual(short.stdout.count("skipped"), 2, short.stdout)
        self.assertEqual(len([f for f in os.listdir(self.out) if f.startswith("ncu-")]), 4)  # no new file


class RunGpuSignal(unittest.TestCase):
    def test_a_timeout_stops_the_build_and_marks_it_killed(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        repo, stubs, out = (os.path.join(tmp.name, d) for d in ("repo", "bin", "out"))
        os.makedirs(os.path.join(repo, "bench"))
        os.makedirs(stubs)
        open(os.path.join(repo, "CMakeLists.txt"), "w").close()  # run_gpu.sh checks it runs at a root
        shutil.copy(os.path.join(ROOT, "bench", "run_gpu.sh"), os.path.join(repo, "bench", "run_gpu.sh"))
        pidfile = os.path.join(tmp.name, "ninja.pid")

        def kill_left_build():  # whatever the outcome, leave no stub behind
            try:
                with open(pidfile) as f:
                    os.kill(int(f.read()), 9)
            except (OSError, ValueError):
                pass
        self.addCleanup(kill_left_build)
        CallStages.write_exe(os.path.join(stubs, "cmake"), "#!/bin/bash\nexit 0\n")
        CallStages.write_exe(os.path.join(stubs, "ninja"),
                             f"#!/bin/bash\n[[ $1 == --version ]] && exit 0\necho $$ > {pidfile}\nexec sleep 60\n")
        env = dict(os.environ, OUT=out, PATH=stubs + os.pathsep + os.environ["PATH"], CONVLAB_GIT_REV="test")
        started = time.monotonic()
        r = subprocess.run(["timeout", "4", "bash", "bench/run_gpu.sh", "--no-bench"], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertLess(time.monotonic() - started, 30)
        self.assertNotEqual(r.returncode, 0)
        with open(os.path.join(out, "summary.txt")) as f:
            summary = f.read()
        self.assertRegex(summary, r"build\s+KILLED")
        with open(pidfile) as f:
            pid = int(f.read())
        for _ in range(40):  # the stub's sleep must be gone, not left running as an orphan
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            self.fail("the build run_gpu.sh started outlived it")


if __name__ == "__main__":
    unittest.main()
