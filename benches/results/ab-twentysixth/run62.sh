#!/bin/bash
# Twenty-sixth session, call 2: F16 ReLU² in Burn's rounding on the H200. Call 1 found Burn's block test
# differing there in 1 of 672 dL/dx and 9 of 4352 dW1 elements (1-2 ulp): products g·r in F16's subnormal
# range, which Burn's fused backward rounds to F16 before doubling on the H200 (native F16 arithmetic)
# and not on lavapipe. bitsparse-burn now asks Burn which rounding a device uses and runs that one
# (Activation::Relu2Stepwise on the H200, if the probe says so). Binaries of f62aa0c: Burn's block tests
# (stripped, xz: .devbin/burntest.xz, `cargo test --release -p bitsparse-burn --no-run`) and burn-gpt
# (.devbin/burn-gpt.xz, `cargo build --release -p burn-gpt --bin burn-gpt`). Then the twenty-fifth
# session's mixed-F16 run (run57.sh), which was not bit-identical.
R=/tmp/res62
. benches/results/device-call.sh
xz -dc .devbin/burntest.xz > /tmp/burntest && chmod +x /tmp/burntest
timeout 150 /tmp/burntest > $R/burn-all.log 2>&1
echo "burn rc=$?"
save_results
[ -x /tmp/burn-gpt ] || { xz -dc .devbin/burn-gpt.xz > /tmp/burn-gpt && chmod +x /tmp/burn-gpt; }
t0=$(date +%s)
timeout 500 /tmp/burn-gpt --dtype f16 --d-model 768 --n-layer 12 --n-head 12 --context 256 --batch 16 --arena-mb 512 \
  --lr 5e-4 --pretrain 1500 --steps 20 --warmup 3 --compare-every 5 --json --out $R/gpt-f16.json --plot $R/gpt-f16.svg > $R/gpt-f16.log 2>&1
echo "burn-gpt rc=$? $(($(date +%s) - t0))s"
save_results
echo total $(($(date +%s) - T0))s
