# Sourced by the device-call scripts (benches/results/ab-*/run*.sh from the twentieth session on, and
# experiments/*/next-call.sh): the loader set-up of docs/DEVICE.md and one bench run per call of
# `bench_run` (one demo-trainer run per `burn_gpt_run`), each followed by a tar of the results folder
# into $OUT (the device tool returns at most 8 files of a call, and a call cut short still returns what
# finished).
#
# Before sourcing: R (the results folder, e.g. /tmp/resN); optional ON_H200 (below), LIMIT (seconds after the call's
# start past which further runs are skipped; 480 by default), RUN_TIMEOUT (seconds one bench run may
# take; 150 by default) and ONLY_GPU (the card the call is for, below).
set -u
# ON_H200 (optional, a script's path): on an H200 the call runs that script instead (exec, before
# anything else here; LIMIT reaches it where the caller had it from the environment), so one prepared
# call serves whichever card comes.
if [ -n "${ON_H200:-}" ]; then
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1)" in
    *H200*) exec bash "$ON_H200" ;;
  esac
fi
T0=$(date +%s)
LIMIT=${LIMIT:-480}
# ONLY_GPU (optional, e.g. H200): on a card whose name lacks it the call stops here, before the loader
# set-up, so a call that lands on another card costs its start only.
if [ -n "${ONLY_GPU:-}" ]; then
  gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>&1)
  case "$gpu" in
    *"$ONLY_GPU"*) ;;
    *) echo "$gpu: not an $ONLY_GPU, nothing run"; exit 0 ;;
  esac
fi
for f in .gl/*.deb; do dpkg -x "$f" / >/dev/null 2>&1; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export VK_ICD_FILENAMES=$VK_DRIVER_FILES
mkdir -p "$R"

# The row sets the kernel calls time (with kernel_ab_env): BF16 copy and the training path's kernels
# (fused and plain forward and backward), the forward only, and e4m3's decompress in both sign modes.
TRAIN_ROWS="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward,fused_backward,plain_backward"
FWD_ROWS="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_OPS=copy,fused_forward,plain_forward"
E4M3_DEC_ROWS="BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,decompress"
# Every row a floor of issues 15 and 16 reads (the thirty-sixth session's standing set): BF16 in both sign
# modes, compress and decompress (versions 1 and 2) with the training path's kernels; e4m3's codec.
FLOOR_ROWS="BITSPARSE_BENCH_DTYPES=bf16 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress,fused_forward,plain_forward,fused_backward,plain_backward"
E4M3_ROWS="BITSPARSE_BENCH_DTYPES=e4m3 BITSPARSE_BENCH_SIGN_PACK=both BITSPARSE_BENCH_OPS=copy,compress,decompress"

# Tar the results folder into $OUT/<its name>.tgz.
save_results() {
  tar czf "$OUT/$(basename "$R").tgz" -C "$(dirname "$R")" "$(basename "$R")"
}

# bench_run NAME BIN [VAR=VALUE ...]: .devbin/BIN (a stripped `codec` bench binary) with the variables
# set; its log and bench.json land in $R as NAME.log / NAME.json.
bench_run() {
  local name=$1 bin=$2
  shift 2
  if [ $(($(date +%s) - T0)) -gt "$LIMIT" ]; then
    echo "$name skipped"
    return
  fi
  local t0
  t0=$(date +%s)
  # A run that hangs (a kernel's first run on a driver) is cut after RUN_TIMEOUT seconds (150 by
  # default), so the call still returns what finished.
  timeout "${RUN_TIMEOUT:-150}" env "$@" ".devbin/$bin" --no-progress --out "/tmp/o_$name" > "$R/$name.log" 2>&1
  local rc=$?
  cp "/tmp/o_$name/bench.json" "$R/$name.json" 2>/dev/null
  echo "$name rc=$rc $(($(date +%s) - t0))s"
  save_results
}

# gpu_tests BIN FILTER...: the GPU test binary .devbin/BIN once per FILTER (at most 120 s each), each
# log in $R/gputests_FILTER.txt and its result line echoed, then the results saved. On the device the
# GL-backend tests fail (its GL adapter opens no device, docs/DEVICE.md).
gpu_tests() {
  local bin=$1 f
  shift
  for f in "$@"; do
    XDG_RUNTIME_DIR=/tmp timeout 120 ".devbin/$bin" "$f" > "$R/gputests_$f.txt" 2>&1
    echo "gpu tests $f rc=$? $(grep 'test result' "$R/gputests_$f.txt")"
  done
  save_results
}

# triton_anchor [TIMEOUT]: the Triton anchor (copy, the six cuBLAS FFN GEMMs, the Triton codecs) into
# $R/triton.jsonl, unbuffered so a run cut at TIMEOUT seconds (150 by default) keeps the lines it
# printed, then the results saved.
triton_anchor() {
  timeout "${1:-150}" python3 -u benches/anchors/triton_anchor.py > "$R/triton.jsonl" 2> "$R/triton.err"
  echo "triton rc=$?"
  save_results
}

# bench_pairs A BIN_A B BIN_B [VAR=VALUE ...]: an interleaved A/B, `bench_run` as A1 BIN_A, B1 BIN_B,
# A2 BIN_A, B2 BIN_B, every run with the same variables (a disturbed batch then shows in one pair only).
bench_pairs() {
  local a=$1 bin_a=$2 b=$3 bin_b=$4
  shift 4
  bench_run "${a}1" "$bin_a" "$@"
  bench_run "${b}1" "$bin_b" "$@"
  bench_run "${a}2" "$bin_a" "$@"
  bench_run "${b}2" "$bin_b" "$@"
}

# decoder_ab_env: the settings of the decoders' A/B calls — 201M elements, 20 repetitions, unordered
# tiles, copy and decompress only, unpacked values (a run sets dtypes, densities and sign packing).
decoder_ab_env() {
  export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
  export BITSPARSE_BENCH_OPS=copy,decompress BITSPARSE_BENCH_SIGN_PACK=off
}

# kernel_ab_env [STATS_FILTER BIN...]: the settings of the thirtieth session's kernel A/B calls — 201M
# elements, 20 repetitions, unordered tiles, ρ = 0.5 / 0.176 / 0.05, unpacked values (a run sets
# dtypes and ops) — after recording the GPU's name and, for each pipeline_stats binary BIN given
# (`ps_h` ...), the driver's statistics of the pipelines matching STATS_FILTER in $R/stats_<suffix>.txt.
kernel_ab_env() {
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > "$R/gpu.txt" 2>&1
  if [ $# -gt 0 ]; then
    local filter=$1 bin
    shift
    for bin in "$@"; do
      ".devbin/$bin" --policy unchecked --filter "$filter" > "$R/stats_${bin#ps_}.txt" 2>&1
    done
  fi
  export BITSPARSE_BENCH_SIZES=201326592 BITSPARSE_BENCH_REPS=20 BITSPARSE_BENCH_TILE_ORDER=unordered
  export BITSPARSE_BENCH_DENSITIES=0.5,0.176,0.05 BITSPARSE_BENCH_SIGN_PACK=off
}

# compress_stats SUFFIX [ARG ...]: the driver's statistics (.devbin/ps_x, pipeline_stats, with the ARGs,
# e.g. `--shaders DIR`) of the compress pipelines as the bench builds them (unpacked, ReLU², whole
# tiles, 4 scan slots): the BF16 fused forward, the arena compress and the version-2 writer, into
# $R/stats_SUFFIX.txt, their register and shared-memory counts echoed.
compress_stats() {
  local v=$1 f1=compress.ACT_MODE=1,compress.SIGN_MODE=0,compress.ALL_FULL=1,compress.SCAN_SLOTS=4
  local f2=compress.SIGN_MODE=0,compress.ALL_FULL=1,compress.SCAN_SLOTS=4
  shift
  : > "$R/stats_$v.txt"
  .devbin/ps_x --policy unchecked "$@" --filter "compress.wgsl:compress [SUBGROUP,ARENA,FUSED_FWD,STAGE16,UNORDERED]" --constants "$f1" >> "$R/stats_$v.txt" 2>&1
  .devbin/ps_x --policy unchecked "$@" --filter "compress.wgsl:compress [SUBGROUP,ARENA,STAGE16,UNORDERED]" --constants "$f2" >> "$R/stats_$v.txt" 2>&1
  .devbin/ps_x --policy unchecked "$@" --filter "compress_v2.wgsl:compress [SUBGROUP,STAGE16]" --constants "$f2" >> "$R/stats_$v.txt" 2>&1
  grep -o '^[^ ]* \[[^]]*\].*' "$R/stats_$v.txt" | sed 's/ unchecked.*| Register/ Register/; s/Stack Size.*Shared/Shared/'
}

# burn_gpt_run NAME [ARG ...]: the demo trainer from .devbin/burn-gpt.xz (stripped and xz-compressed:
# 95 MB stripped is past what a call carries; unpacked once into /tmp), run with the ARGs and `--json
# --out $R/NAME.json --plot $R/NAME.svg`; its log lands in $R as NAME.log, then the results are saved.
burn_gpt_run() {
  local name=$1
  shift
  [ -x /tmp/burn-gpt ] || { xz -dc .devbin/burn-gpt.xz > /tmp/burn-gpt && chmod +x /tmp/burn-gpt; }
  local t0
  t0=$(date +%s)
  /tmp/burn-gpt "$@" --json --out "$R/$name.json" --plot "$R/$name.svg" > "$R/$name.log" 2>&1
  echo "burn-gpt rc=$? $(($(date +%s) - t0))s"
  save_results
}

# burn_autotune_runs N [TIMEOUT]: Burn's F32 ReLU² block test (the test binary in .devbin/burntest.xz,
# unpacked once into /tmp) N times, each tuning afresh (no persistent autotune cache) with cubecl's log,
# whose autotune decisions land in $R/autotune-I.txt beside the test's log $R/burn-f32-relu2-I.log.
burn_autotune_runs() {
  local n=$1 limit=${2:-120} i
  [ -x /tmp/burntest ] || { xz -dc .devbin/burntest.xz > /tmp/burntest && chmod +x /tmp/burntest; }
  for i in $(seq 1 "$n"); do
    CUBECL_AUTOTUNE_CACHE=0 CUBECL_DEBUG_LOG=/tmp/cubecl-$i.log timeout "$limit" /tmp/burntest --exact mlp::train_bit_identical_burn_f32_relu2 > "$R/burn-f32-relu2-$i.log" 2>&1
    echo "burn $i rc=$?"
    grep -E "^Fastest result|^Autotune\[" "/tmp/cubecl-$i.log" > "$R/autotune-$i.txt"
    save_results
  done
}
