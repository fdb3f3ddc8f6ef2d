# Whichever Hopper GPU starts, call1.sh runs (copied to .scratch/call.sh, with the two patches of its
# header applied). An H200 runs it whole and its rows can be filed; an H100 runs it without PyTorch,
# so that the tests, the sanitizers and the 10e/10y/10z and 11c/11q medians come back as a check of
# the patches (H100 rows are kept under helper-runs/, never filed).
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  bash .scratch/call.sh
else
  NO_TORCH=1 CALL_LIMIT=${CALL_LIMIT:-450} bash .scratch/call.sh
fi
