# lead-wave4l call R3 (any card): callR2.sh at about 310 s of budget (the build given 250 s, 11s's
# own test rows, then the bench of 11s against 11c at the 14² inputs).
CALL_BUDGET=${CALL_BUDGET:-310} exec bash bench/results/h200/helper-runs/lead-wave4l/callR2.sh
