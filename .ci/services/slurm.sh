#!/usr/bin/env bash
# Start a one-node Slurm cluster (munged, slurmctld, slurmd from Debian's slurm-wlm) under
# $AKA_SLURM_BASE for the `slurm`-marked tests, as root and without systemd.
# Idempotent: exits 0 at once when the cluster under $BASE already answers.
# WITH_DBD=1 also starts MariaDB + slurmdbd so that sacct works (~3 s more, +10 s install).
# Usage: eval "$(.ci/services/slurm.sh)"   # exports SLURM_CONF
# Stop:  for f in slurmd slurmctld slurmdbd mysqld munged; do kill "$(cat "$BASE/run/$f.pid")"; done
set -euo pipefail
BASE=${AKA_SLURM_BASE:-/tmp/aka-slurm}
WITH_DBD=${WITH_DBD:-0}
CONF=$BASE/slurm.conf
say() { echo "slurm.sh: $*" >&2; }

if [ -f "$CONF" ] && SLURM_CONF=$CONF timeout 5 sinfo -h -o %t 2>/dev/null | grep -q .; then
  say "slurm already running ($CONF)"
  echo "export SLURM_CONF=$CONF"
  exit 0
fi
need=(slurm-wlm munge)
[ "$WITH_DBD" = 1 ] && need+=(mariadb-server slurmdbd)
missing=()
for p in "${need[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} (apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }
fi
# A cluster left half-dead by a killed job: stop what is left before starting afresh.
for f in slurmd slurmctld slurmdbd mysqld munged; do
  p=$(cat "$BASE/run/$f.pid" 2>/dev/null || true)
  [ -n "$p" ] && kill "$p" 2>/dev/null || true
done
rm -rf "$BASE"; mkdir -p "$BASE"/{munge,run,state,spool,log,mysql}
chmod 755 "$BASE" "$BASE/run"; chmod 700 "$BASE/munge"  # munged insists on these modes
dd if=/dev/urandom of="$BASE/munge/munge.key" bs=1024 count=1 status=none; chmod 400 "$BASE/munge/munge.key"
SOCK=$BASE/run/munge.socket
munged --key-file="$BASE/munge/munge.key" --socket="$SOCK" --pid-file="$BASE/run/munged.pid" \
       --log-file="$BASE/log/munged.log" --seed-file="$BASE/munge/munged.seed"
ACCT="AccountingStorageType=accounting_storage/none"
if [ "$WITH_DBD" = 1 ]; then
  mariadb-install-db --datadir="$BASE/mysql" --user=root --auth-root-authentication-method=normal >"$BASE/log/mysql_install.log" 2>&1
  (mariadbd --datadir="$BASE/mysql" --socket="$BASE/run/mysql.sock" --port=13306 --bind-address=127.0.0.1 --user=root \
     --pid-file="$BASE/run/mysqld.pid" --log-error="$BASE/log/mysqld.err" >/dev/null 2>&1 &)
  for _ in $(seq 50); do mariadb -S "$BASE/run/mysql.sock" -uroot -e 'select 1' >/dev/null 2>&1 && break; sleep 0.2; done
  mariadb -S "$BASE/run/mysql.sock" -uroot -e "create database slurm_acct_db; create user 'slurm'@'localhost' identified by 'slurmpw'; grant all on slurm_acct_db.* to 'slurm'@'localhost';"
  cat > "$BASE/slurmdbd.conf" <<EOC
AuthType=auth/munge
AuthInfo=socket=$SOCK
DbdHost=localhost
DbdPort=16819
SlurmUser=root
LogFile=$BASE/log/slurmdbd.log
PidFile=$BASE/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=13306
StorageUser=slurm
StoragePass=slurmpw
StorageLoc=slurm_acct_db
EOC
  chmod 600 "$BASE/slurmdbd.conf"
  # The munge socket as the storage password is what makes slurmctld authenticate to the DBD.
  ACCT="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=16819
AccountingStoragePass=$SOCK"
fi
MEM=$(( $(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo) - 1024 ))
cat > "$CONF" <<EOC
ClusterName=local
SlurmctldHost=localhost
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation=$BASE/state
SlurmdSpoolDir=$BASE/spool
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/linux
$ACCT
JobCompType=jobcomp/filetxt
JobCompLoc=$BASE/log/jobcomp.txt
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOC
export SLURM_CONF=$CONF
if [ "$WITH_DBD" = 1 ]; then
  slurmdbd
  for _ in $(seq 50); do sacctmgr -i add cluster local >/dev/null 2>&1 && break; sleep 0.2; done
fi
slurmctld
slurmd -N localhost  # the node is called localhost whatever the host name is
for _ in $(seq 100); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 0.2; done
if ! sinfo -h -o %t 2>/dev/null | grep -q idle; then
  say "the node did not become idle within 20 s; last log lines:"
  tail -n 20 "$BASE/log/slurmctld.log" "$BASE/log/slurmd.log" >&2
  exit 1
fi
say "slurm started ($CONF)"
echo "export SLURM_CONF=$CONF"
