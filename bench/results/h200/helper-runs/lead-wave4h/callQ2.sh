# lead-wave4h call Q2: the mended sweep (tests/block_sweep_test.cpp) in a partial GPU build, on
# whatever card comes: only lesson 09's softmax among the GPU sources, then the two block sweeps
# (expected: both skipped with the partial build's reason, none failed) and softmax's GPU tests.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-300}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
CALL_GPU_ONLY='gpu/softmax/' call_build 240 || { call_finish; exit 4; }
call_stage tests 50 --no-bench --only 'every GPU rung agrees with the reference on random shapes|softmax/gpu/'
grep -h "CONVLAB-SKIP" build-gpu/Testing/Temporary/LastTest.log 2>/dev/null | sort -u
call_finish
ls -la "$OUT"
