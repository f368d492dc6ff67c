# Sourced by the scripts in .ci/: `stage NAME COMMAND...` runs one stage of CI and says in the log
# how long it took; when the script exits, a table lists every stage it ran (a failed one too).
# A stage that fails ends the script with its exit status (the scripts run with `set -e`).

ci_stages=()

stage() {
    local name=$1 start=$SECONDS status
    shift
    echo "ci: stage $name: started $(date -u +%H:%M:%S) UTC"
    # In a subshell with `set -e` of its own: a function given as COMMAND stops at its first
    # failing line (bash ignores `set -e` inside `COMMAND || ...`).
    set +e
    (set -e; "$@")
    status=$?
    set -e
    local seconds=$((SECONDS - start))
    echo "ci: stage $name: took ${seconds} s (exit status $status)"
    ci_stages+=("$(printf '%-28s %6d s  exit status %d' "$name" "$seconds" "$status")")
    return "$status"
}

ci_stage_table() {
    [ ${#ci_stages[@]} -gt 0 ] || return 0
    echo "ci: how long each stage took ($0):"
    printf 'ci:   %s\n' "${ci_stages[@]}"
}
trap ci_stage_table EXIT
