# Sourced by .ci/run and scripts/ci/test.sh: `stage NAME COMMAND...` runs one stage and keeps
# its duration; the durations are printed when the shell exits, so a run that fails still
# says where its time went. The first stage that fails ends the run with its exit code.

declare -a _stage_names=() _stage_seconds=() _stage_results=()
_stage_title=${STAGES_TITLE:-stages}

stage() {
  local name=$1
  shift
  local started=$SECONDS rc=0
  printf '\n==> %s: %s\n' "$_stage_title" "$name" >&2
  "$@" || rc=$?
  _stage_names+=("$name")
  _stage_seconds+=($((SECONDS - started)))
  _stage_results+=("$([[ $rc -eq 0 ]] && echo ok || echo "FAILED ($rc)")")
  [[ $rc -eq 0 ]] || exit "$rc"
}

_print_stages() {
  local rc=$? total=0 i
  ((${#_stage_names[@]})) || return "$rc"
  printf '\n%s, duration of each:\n' "$_stage_title" >&2
  for i in "${!_stage_names[@]}"; do
    printf '  %-44s %4dm%02ds  %s\n' "${_stage_names[$i]}" $((_stage_seconds[i] / 60)) $((_stage_seconds[i] % 60)) "${_stage_results[$i]}" >&2
    total=$((total + _stage_seconds[i]))
  done
  printf '  %-44s %4dm%02ds\n' total $((total / 60)) $((total % 60)) >&2
  return "$rc"
}
trap _print_stages EXIT
