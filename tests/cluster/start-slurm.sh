#!/usr/bin/env bash
# A real one-node SLURM for the tests marked slurm_real (tests/cluster/, docs/guide/cluster.md):
# slurmctld + slurmd on this machine (node = this host with its real CPUs and memory), munge for
# authentication and slurmdbd on MariaDB for accounting (sacct), started without systemd.
# Needs root (or passwordless sudo) and Debian's apt. About 35 s on a fresh machine, 8 s once
# the packages are installed. tests/cluster/stop-slurm.sh stops exactly what this started.
#
#   bash tests/cluster/start-slurm.sh          # install, configure, start, run one test job
#
# Settings (environment):
#   COMCO_SLURM_DIR   logs, state, pid files and the database (default /tmp/comco-slurm)
#   PARTITION         the one partition (default debug)
#   ACCOUNTING        slurmdbd (default: sacct works) or none (no accounting, as some clusters run)
set -euo pipefail

if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null && sudo -n true 2>/dev/null || { echo "start-slurm.sh: needs root (or passwordless sudo)" >&2; exit 1; }
  exec sudo -n --preserve-env=COMCO_SLURM_DIR,PARTITION,ACCOUNTING bash "$0" "$@"
fi

D=${COMCO_SLURM_DIR:-/tmp/comco-slurm}
PARTITION=${PARTITION:-debug}
ACCOUNTING=${ACCOUNTING:-slurmdbd}
CLUSTER=comco
HOST=$(hostname -s)
HERE=$(cd "$(dirname "$0")" && pwd)
T0=$(date +%s%N)
say() { local t=$(( ($(date +%s%N) - T0) / 100000000 )); echo "[$((t / 10)).$((t % 10)) s] $*"; }

# ---- the packages (their init scripts must not start anything: policy-rc.d answers 101)
export DEBIAN_FRONTEND=noninteractive
PKGS="slurmctld slurmd slurm-client munge"
[ "$ACCOUNTING" = slurmdbd ] && PKGS="$PKGS slurmdbd mariadb-server"
if ! dpkg -s $PKGS >/dev/null 2>&1; then
  own_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; own_policy=1; fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends $PKGS >/dev/null
  [ "$own_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
fi
say "packages: $(slurmd -V)"

# ---- never replace a SLURM configuration this script did not write
if [ -s /etc/slurm/slurm.conf ] && ! grep -q '^# written by comco tests/cluster/start-slurm.sh' /etc/slurm/slurm.conf; then
  echo "start-slurm.sh: /etc/slurm/slurm.conf exists and is not ours; not touching this machine's SLURM" >&2
  exit 1
fi

# ---- a second start first stops what the first one started
[ -d "$D/run" ] && COMCO_SLURM_DIR="$D" bash "$HERE/stop-slurm.sh" >/dev/null 2>&1 || true
mkdir -p "$D"/{log,run,spool,state}
grep -qE "^[0-9.]+[[:space:]].*\b$HOST\b" /etc/hosts || echo "127.0.0.1 $HOST" >> /etc/hosts

# ---- munge: the key, then the daemon
[ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge
install -d -o munge -g munge -m 0700 /var/log/munge /var/lib/munge
runuser -u munge -- /usr/sbin/munged --pid-file=/run/munge/munged.pid
cp /run/munge/munged.pid "$D/run/munged.pid"
munge -n | unmunge >/dev/null
say "munged $(cat "$D/run/munged.pid")"

# ---- slurm.conf: this host as the one node, with the CPUs and memory slurmd finds
read -r CPUS MEM < <(slurmd -C | sed -n 's/.*CPUs=\([0-9]*\).*RealMemory=\([0-9]*\).*/\1 \2/p')
if [ "$ACCOUNTING" = slurmdbd ]; then
  ACCT="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/linux"
else
  ACCT="AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none"
fi
cat > /etc/slurm/slurm.conf <<CONF
# written by comco tests/cluster/start-slurm.sh (state and logs in $D)
ClusterName=$CLUSTER
SlurmctldHost=$HOST(127.0.0.1)
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
# no systemd and no cgroups here: processes are tracked through /proc
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
JobRequeue=1
KillWait=30
MinJobAge=300
$ACCT
JobCompType=jobcomp/none
MailProg=/bin/true
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=$PARTITION Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
say "slurm.conf: node $HOST, $CPUS CPUs, $MEM MB, partition $PARTITION"

# ---- accounting: MariaDB (its data in $D/mysql), then slurmdbd
if [ "$ACCOUNTING" = slurmdbd ]; then
  install -d -o mysql -g mysql "$D/mysql" "$D/mysql-run"  # the server runs as mysql: its pid file and log there
  [ -d "$D/mysql/mysql" ] || mariadb-install-db --user=mysql --datadir="$D/mysql" \
    --auth-root-authentication-method=socket --skip-test-db >"$D/log/mariadb-install.log" 2>&1
  SOCK="$D/mysql-run/mysqld.sock"
  /usr/sbin/mariadbd --user=mysql --datadir="$D/mysql" --socket="$SOCK" --port=3306 --bind-address=127.0.0.1 \
    --pid-file="$D/mysql-run/mariadbd.pid" --log-error="$D/mysql-run/mariadb.log" --innodb-buffer-pool-size=64M \
    --skip-name-resolve >/dev/null 2>&1 &
  for _ in $(seq 120); do mariadb --socket="$SOCK" -e 'select 1' >/dev/null 2>&1 && break; sleep 0.5; done
  cp "$D/mysql-run/mariadbd.pid" "$D/run/mariadbd.pid"
  mariadb --socket="$SOCK" <<SQL
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'comco-slurm';
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
SQL
  say "mariadbd $(cat "$D/run/mariadbd.pid")"
  cat > /etc/slurm/slurmdbd.conf <<CONF
# written by comco tests/cluster/start-slurm.sh
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
SlurmUser=root
LogFile=$D/log/slurmdbd.log
PidFile=$D/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageLoc=slurm_acct_db
StorageUser=slurm
StoragePass=comco-slurm
CONF
  chmod 600 /etc/slurm/slurmdbd.conf
  /usr/sbin/slurmdbd
  for _ in $(seq 120); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.5; done
  sacctmgr -i -Q add cluster "$CLUSTER" >/dev/null 2>&1 || true
  say "slurmdbd $(cat "$D/run/slurmdbd.pid"), cluster $CLUSTER registered"
fi

# ---- the controller and the node
/usr/sbin/slurmctld
/usr/sbin/slurmd
state=""
for _ in $(seq 120); do
  state=$(sinfo -h -N -o %t 2>/dev/null | head -1)
  [ "$state" = idle ] && break
  sleep 0.5
done
[ "$state" = idle ] || { echo "start-slurm.sh: the node is '$state', not idle; see $D/log" >&2; exit 1; }
say "slurmctld $(cat "$D/run/slurmctld.pid"), slurmd $(cat "$D/run/slurmd.pid"): node idle"

# ---- one job through sbatch and srun, and (with accounting) sacct has it
job=$(sbatch --parsable -p "$PARTITION" -c 1 --mem=100M -t 1 -o "$D/log/check-%j.out" --wrap 'srun hostname')
for _ in $(seq 120); do
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 0.5
done
[ "$(cat "$D/log/check-$job.out")" = "$(hostname)" ] || { echo "start-slurm.sh: test job $job printed '$(cat "$D/log/check-$job.out")'" >&2; exit 1; }
if [ "$ACCOUNTING" = slurmdbd ]; then
  for _ in $(seq 60); do
    [ "$(sacct -n -X -P -o State -j "$job" 2>/dev/null)" = COMPLETED ] && break
    sleep 0.5
  done
  [ "$(sacct -n -X -P -o State -j "$job")" = COMPLETED ] || { echo "start-slurm.sh: sacct does not show test job $job as COMPLETED" >&2; exit 1; }
fi
say "SLURM ready: test job $job ran on $(hostname -s)"
