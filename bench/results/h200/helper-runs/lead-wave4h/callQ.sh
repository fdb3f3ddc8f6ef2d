# lead-wave4h call Q: a correctness check of main's GPU variants outside lessons 10 and 11 (which every
# filing call tests), on whatever card comes (an H100 is enough: this call files no time). The last
# run of every GPU test was the snapshot's (8db7aee, 2026-12-02); since then the shared headers
# (gpu/lib/check.cuh, hopper/tma.cuh, hopper/cluster.cuh, wgmma_gemm.cuh, ffn_hidden_loop.cuh, mma.cuh)
# changed for lessons 10 and 11. Build every GPU source but lessons 10's and 11's, then every GPU
# test (their tests skip with their reason). A build cut short resumes on the same warm machine.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-585}
export CONVLAB_GIT_REV=$(cat .scratch/rev)
CALL_GPU_ONLY='gpu/(lib|attention|conv2d|conv_pool|ffn|gemm|softmax|tucker_conv|tucker_core)/' call_build 470 || { call_finish; exit 4; }
left=$((CALL_LIMIT - SECONDS - 10))
((left > 30)) && call_stage tests $left --no-bench
call_finish
ls -la "$OUT"
