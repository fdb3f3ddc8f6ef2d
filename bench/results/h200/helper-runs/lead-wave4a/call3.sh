# lead-wave4a call 3: call2.sh's cut form (its header lists the stages), for ≈ 470 s of device time.
CALL_FORM=cut exec bash bench/results/h200/helper-runs/lead-wave4a/call2.sh
