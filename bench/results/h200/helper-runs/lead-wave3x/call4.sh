# lead-wave3x call 4, for the next session (any card; on an H200 also the filing run): 10e with
# the k8 tail (k8-tail.patch: the conv's last k-step as an m16n8k8 from an ldmatrix.x2) against
# copy 10y = the filed 10e, and on an H200 PyTorch at all five ConvFirst goal shapes beside 10c,
# 10e and 10f in one process (this takes up ../lead-wave3v/call3.sh, so that every ratio comes
# from one process again). Tests of 10e and 10y, compute-sanitizer's four tools on 10e.
# Host steps before it:
#   git show HEAD:gpu/convfirst/10e_fused_cluster.cu | sed 's#10e_fused_cluster#10y_fused_cluster_before#g' > gpu/convfirst/10y_fused_cluster_before.cu
#   git apply bench/results/h200/helper-runs/lead-wave3x/k8-tail.patch
#   mkdir -p .scratch; git rev-parse --short HEAD > .scratch/rev
# File only from an H200, only if every test passed and the sanitizers are clean, rows with
# cv ≤ 5 %: 10c, 10f and PyTorch's rows always (their code is the filed code); 10e's rows only if
# the k8 tail is kept (then the patch lands with them); never 10y's.
source bench/call_stages.sh
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
TORCH=; BENCH_LIMIT=60
case "$g" in *H200*) TORCH=--torch; BENCH_LIMIT=240;; esac
export CONVLAB_GIT_REV=$(cat .scratch/rev)+k8-tail
CALL_LIMIT=570
call_build 300 || exit 4
call_stage tests 60 --no-bench --only 'convfirst/gpu/(10e|10y)_'
CONVLAB_TORCH_SCRIPTS=convfirst \
  CONVLAB_TORCH_SHAPES='128,56,56,64,256,64,1;128,56,56,64,256,128,2;128,28,28,128,512,128,1;128,14,14,256,1024,256,1;128,7,7,512,2048,512,1' \
  CONVLAB_TORCH_TIMEOUT=170 CONVLAB_TORCH_BUDGET=150 CONVLAB_BENCH_TIMEOUT=50 \
  call_stage bench $BENCH_LIMIT --no-tests $TORCH --only 'convfirst/gpu/(10c|10e|10f|10y)_'
call_sanitize 'convfirst/gpu/10e_fused_cluster'
call_finish
