# Sourced by the scripts in .ci/: `stage NAME COMMAND...` runs one stage of CI and says in the log
# how long it took and how much disk was left after it; when the script exits, a table lists every
# stage it ran (a failed one too). A stage that fails ends the script with its exit status (the
# scripts run with `set -e`).

ci_stages=()

# The free space, in GB, on the disk that holds the temporary folders (the environments CI makes
# live there, and a CI machine's disk can be nearly full: one stop's CI ran out).
ci_free_gb() {
    df -P "${TMPDIR:-/tmp}" | awk 'NR == 2 {printf "%.1f", $4 / 1048576}'
}

stage() {
    local name=$1 start=$SECONDS status
    shift
    echo "ci: stage $name: started $(date -u +%H:%M:%S) UTC with $(ci_free_gb) GB free"
    # In a subshell with `set -e` of its own: a function given as COMMAND stops at its first
    # failing line (bash ignores `set -e` inside `COMMAND || ...`).
    set +e
    (set -e; "$@")
    status=$?
    set -e
    local seconds=$((SECONDS - start))
    local free
    free=$(ci_free_gb)
    echo "ci: stage $name: took ${seconds} s (exit status $status; $free GB free after it)"
    ci_stages+=("$(printf '%-28s %6d s  exit status %d  %6s GB free' "$name" "$seconds" "$status" "$free")")
    return "$status"
}

ci_stage_table() {
    [ ${#ci_stages[@]} -gt 0 ] || return 0
    echo "ci: how long each stage took ($0):"
    printf 'ci:   %s\n' "${ci_stages[@]}"
}
trap ci_stage_table EXIT
