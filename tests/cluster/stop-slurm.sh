#!/usr/bin/env bash
# Stop what tests/cluster/start-slurm.sh started, by the pids it kept in $COMCO_SLURM_DIR/run:
# the jobs still queued or running are cancelled, then slurmd, slurmctld, slurmdbd, mariadbd
# and munged end in the reverse order of their start. Nothing else is touched.
set -u
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  exec sudo -n --preserve-env=COMCO_SLURM_DIR bash "$0" "$@"
fi
D=${COMCO_SLURM_DIR:-/tmp/comco-slurm}
if [ -f "$D/run/slurmctld.pid" ] && kill -0 "$(cat "$D/run/slurmctld.pid")" 2>/dev/null; then
  scancel --full --state=PENDING,RUNNING,SUSPENDED 2>/dev/null || true
fi
for name in slurmd slurmctld slurmdbd mariadbd munged; do
  f="$D/run/$name.pid"
  [ -f "$f" ] || continue
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    if kill -0 "$pid" 2>/dev/null; then echo "$name ($pid) still running after 15 s: SIGKILL"; kill -9 "$pid"; fi
    echo "stopped $name ($pid)"
  fi
  rm -f "$f"
done
