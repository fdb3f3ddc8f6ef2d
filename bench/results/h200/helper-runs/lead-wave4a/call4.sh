# lead-wave4a call 4: call2.sh's least form (its header lists the stages), for ≈ 380 s of device time.
CALL_FORM=least exec bash bench/results/h200/helper-runs/lead-wave4a/call2.sh
