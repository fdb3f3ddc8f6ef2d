# lead-wave4i: an H200 runs ../lead-wave4h/callL.sh (lesson 10's filing run; callL2.sh follows on the
# same warm machine), any other card callS.sh (the partial build mended in a4862b1, the gate tail inside pass 1, the block scripts
# on bench/torch_blocks.py).
g=$(nvidia-smi --query-gpu=name --format=csv,noheader)
case "$g" in
  *H200*) exec bash bench/results/h200/helper-runs/lead-wave4h/callL.sh ;;
  *) exec bash bench/results/h200/helper-runs/lead-wave4i/callS.sh ;;
esac
