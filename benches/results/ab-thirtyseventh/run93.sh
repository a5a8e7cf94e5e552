#!/bin/bash
# Thirty-seventh session, call 5 (any card): why the fused forward's 32-register builds run 15 % slower
# (calls 2-4: the packed state and the NaN-free square both fell from 37 registers to 32 and from
# 21 KB of code to 15-17 KB). Workgroups per SM are set with the scan's workgroup array
# (`compress.SCAN_SLOTS`, made tunable for this call only): 1991 slots (about 18 KB a workgroup) give 12
# per SM on an H100, 3116 (about 27 KB) 8, at the price of the L1 the shared memory takes. h = the kept
# kernels (37 registers: 12 per SM), y = the NaN-free square (32: 16 per SM).
# Binaries (carry `.gl` and `.devbin`): codec_hp (this session's tree with SCAN_SLOTS tunable),
# codec_yp (the same with experiments/thirtyseventh/nan-free-square.patch).
# Runs past LIMIT seconds are skipped: call with timeout_s ≈ LIMIT + 70.
R=/tmp/res93
LIMIT=${LIMIT:-260}
. benches/results/device-call.sh
kernel_ab_env
bench_run h codec_hp $FWD_ROWS
bench_run y codec_yp $FWD_ROWS
bench_run h12 codec_hp $FWD_ROWS BITSPARSE_KERNEL_CONSTANTS=compress.SCAN_SLOTS=1991
bench_run y12 codec_yp $FWD_ROWS BITSPARSE_KERNEL_CONSTANTS=compress.SCAN_SLOTS=1991
bench_run h8 codec_hp $FWD_ROWS BITSPARSE_KERNEL_CONSTANTS=compress.SCAN_SLOTS=3116
bench_run y8 codec_yp $FWD_ROWS BITSPARSE_KERNEL_CONSTANTS=compress.SCAN_SLOTS=3116
bench_run h_ codec_hp $FWD_ROWS
echo total $(($(date +%s) - T0))s
