# The next session's first device call (written in wave-3u). Host steps: those in call2.sh's
# header (copies 10x, 10y, 10z; the three lesson-10 patches; .scratch). On an H200 it is the
# filing call (call2.sh). On any other card it applies conv-ahead-diag.patch to the device's copy
# of the tree and runs call3-diag.sh: why the next tile's conv under the last projects lost 4 % at
# C = 256 (phase stamps per tile with it off and on, then 10e timed both ways).
g=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "GPU: $g"
D=bench/results/h200/helper-runs/lead-wave3u
case "$g" in
  *H200*) exec bash $D/call2.sh ;;
  *) git apply $D/conv-ahead-diag.patch && exec bash $D/call3-diag.sh ;;
esac
