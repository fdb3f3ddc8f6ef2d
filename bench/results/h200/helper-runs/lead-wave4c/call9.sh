# lead-wave4c call 9 (any card): the two lesson-11 rungs that call 8's build could not test, 11a
# (lessons 06 and 03's rungs, layer by layer) and cudnn (cuDNN and cuBLAS), on the GPU test table
# with ring.patch's new shape; the build keeps only the GPU files they run on.
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
source bench/call_stages.sh
CALL_LIMIT=${CALL_BUDGET:-300}
export CONVLAB_GIT_REV=$(cat .scratch/rev)+stream-ring
CALL_GPU_ONLY='gpu/lib/|gpu/mbconv/(11a_|cudnn)|gpu/conv2d/(06a_|cudnn)|gpu/gemm/(03m_|03o_|cublas)' call_build 200 || exit 4
call_stage tests 60 --no-bench --only 'mbconv/gpu/(11a_|cudnn)'
call_finish
ls -la "$OUT"
