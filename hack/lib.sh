# Shared by hack/*.sh; source it after cd-ing to the repository root.

# kill_orphaned_control_plane kills processes of this repository's bin/
# (kube-apiserver, etcd, kube-scheduler) whose parent is gone: a test or benchmark binary
# killed hard (a timeout panic, SIGKILL) cannot stop what it started.
kill_orphaned_control_plane() {
  ps -eo pid=,ppid=,args= | awk -v bin="$(pwd)/bin/" '$2 == 1 && index($3, bin) == 1 {print $1}' |
    while read -r pid; do
      echo "killing orphaned control plane process ${pid}" >&2
      kill "${pid}" 2>/dev/null || true
    done
}
