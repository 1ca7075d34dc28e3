# Shared by hack/*.sh; source it after cd-ing to the repository root.

# kill_orphaned_control_plane kills processes of this repository's bin/
# (kube-apiserver, etcd, kube-scheduler), and the scheduler binaries the
# chaos suite builds in _output/tmp/chaos-bin-*, whose parent is gone: a
# test or benchmark binary killed hard (a timeout panic, SIGKILL) cannot
# stop what it started.
kill_orphaned_control_plane() {
  ps -eo pid=,ppid=,args= | awk -v bin="$(pwd)/bin/" -v chaos="$(pwd)/_output/tmp/chaos-bin-" \
    '$2 == 1 && (index($3, bin) == 1 || index($3, chaos) == 1) {print $1}' |
    while read -r pid; do
      echo "killing orphaned control plane process ${pid}" >&2
      kill "${pid}" 2>/dev/null || true
    done
}

# race_unavailable prints why the race detector cannot be used here, or
# nothing if it can.
race_unavailable() {
  if [[ "$(go env GOOS)" == darwin ]]; then
    return # -race needs no cgo on macOS
  fi
  # Checked first: without a compiler, go defaults CGO_ENABLED to 0.
  local cc
  read -r cc _ <<<"$(go env CC)" # the command, without its flags
  if ! command -v "${cc}" >/dev/null 2>&1; then
    echo "no C compiler found (go env CC: ${cc}); install one, e.g. apt-get install gcc"
    return
  fi
  if [[ "$(go env CGO_ENABLED)" != 1 ]]; then
    echo "cgo is disabled (CGO_ENABLED=$(go env CGO_ENABLED)); unset it or set CGO_ENABLED=1"
  fi
}
