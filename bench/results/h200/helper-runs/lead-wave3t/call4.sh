# lead-wave3t call 4, the session's last: on an H200, the filing call (call2.sh, fitted to the
# budget left); on any other card, source profiles instead (bench/profile_source.sh): pass 1 of an
# uncommitted copy of 11c with E padded at every shape (gpu/mbconv/11y_store_pad_all.cu, made on
# the host) at C = 24 @ 56², to set beside wave-3q's profile of the unpadded pass 1 there; then, with
# the time left, 10e at C = 256 @ 14² (today's code: the tree carries call2.sh's two patches, which
# leave every C = 256 kernel's instruction count as it is).
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
case "$g" in *H200*) CALL_LIMIT=330 exec bash .scratch/call.sh ;; esac
set -x
export CONVLAB_GIT_REV=$(cat .scratch/rev)+lane-taps-10c+t-blocks-512+11y
mkdir -p /tmp/b
OUT=/tmp/b timeout 215 bench/run_gpu.sh --no-tests --no-bench > /tmp/b/run.log 2>&1; tail -4 /tmp/b/summary.txt
OUT=$OUT timeout 90 bash bench/profile_source.sh mbconv/gpu/11y_store_pad_all N=128,H=56,C=24,dtype=f16 mbconv_tile_kernel
OUT=$OUT timeout 90 bash bench/profile_source.sh convfirst/gpu/10e_fused_cluster N=128,H=14,C=256,dtype=f16 convfirst_fused_cluster_kernel
cp /tmp/b/summary.txt $OUT/build-summary.txt
ls -la $OUT
