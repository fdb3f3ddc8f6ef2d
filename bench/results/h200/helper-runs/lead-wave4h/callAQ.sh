# lead-wave4h: whichever card comes does the most useful call: an H200 runs callL.sh (lesson 10's
# filing run; callL2.sh follows on the same warm machine), any other card callQ2.sh (the mended
# sweep in a partial GPU build).
g=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$g" in
  *H200*) exec bash bench/results/h200/helper-runs/lead-wave4h/callL.sh ;;
  *) exec bash bench/results/h200/helper-runs/lead-wave4h/callQ2.sh ;;
esac
