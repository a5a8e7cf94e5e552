# Sourced by the sessions' build-binaries.sh scripts (from the repository root): one function that builds
# a codec bench binary for an experiment. Before sourcing: BASE (the commit whose shaders the patches
# were made against) and E (benches/results/experiments).

# build_variant NAME WITH_PS [PATCH ...]: the shaders of BASE plus the patches (paths under $E), the codec
# bench stripped into .devbin/codec_NAME and, when WITH_PS is 1, pipeline_stats into .devbin/ps_NAME;
# `shaders/` restored to HEAD's afterwards.
build_variant() {
  local x=$1 with_ps=$2
  shift 2
  git checkout -q "$BASE" -- shaders
  for pt in "$@"; do git apply "$E/$pt"; done
  local bin
  bin=$(cargo bench -p bitsparse-bench --bench codec --no-run 2>&1 | sed -n 's/.*Executable codec.rs (\(.*\))/\1/p')
  strip -o ".devbin/codec_$x" "$bin"
  if [ "$with_ps" = 1 ]; then
    cargo build --release -p bitsparse-tools --bin pipeline_stats
    strip -o ".devbin/ps_$x" target/release/pipeline_stats
  fi
  git checkout -q HEAD -- shaders
  echo "built codec_$x"
}
