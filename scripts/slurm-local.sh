#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine, for testing `gnnaudit audit --slurm`.
#
#   scripts/slurm-local.sh start   # installs slurm-wlm and munge if missing (root, apt), starts
#                                  # munged, slurmctld and slurmd, waits until the node is idle,
#                                  # and prints SLURM_CONF=<file> (export it for sbatch/squeue)
#   scripts/slurm-local.sh stop    # cancels the jobs, stops the daemons it started, removes the folder
#
# Everything (config, munge socket and key, state, spool, pid and log files) lives in one folder,
# $GNNAUDIT_SLURM_DIR (default /tmp/gnnaudit-slurm); nothing in /etc is changed and no system
# service is used, so it runs where package scripts cannot start services (containers, CI).
# Needs root: slurmd runs jobs as their submitter and munged as the munge user.
# Ports: $GNNAUDIT_SLURM_PORT (slurmctld, default 6817) and the next one (slurmd).
set -euo pipefail
DIR=${GNNAUDIT_SLURM_DIR:-/tmp/gnnaudit-slurm}
PORT=${GNNAUDIT_SLURM_PORT:-6817}
die() { echo "slurm-local: $*" >&2; exit 3; }

install_if_missing() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null && return 0
  [ "$(id -u)" = 0 ] || die "slurm-wlm and munge are not installed, and installing them needs root"
  command -v apt-get >/dev/null || die "slurm-wlm and munge are not installed and there is no apt-get"
  echo "slurm-local: installing slurm-wlm and munge" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 || die "apt-get update failed"
  apt-get install -y -qq --no-install-recommends slurm-wlm munge >&2 || die "apt-get install slurm-wlm munge failed"
}

# Kills the process whose pid is in file $1 if it is still the program $2 (never anything else).
stop_pidfile() {
  local f=$1 prog=$2 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f" 2>/dev/null || true)
  if [ -n "$pid" ] && [ -d "/proc/$pid" ] && grep -q "$prog" "/proc/$pid/comm" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    [ -d "/proc/$pid" ] && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

stop() {
  if [ -f "$DIR/slurm.conf" ]; then
    export SLURM_CONF="$DIR/slurm.conf"
    if [ -f "$DIR/slurmctld.pid" ]; then
      ids=$(squeue -h -o %A 2>/dev/null | sort -u || true)
      if [ -n "$ids" ]; then
        # shellcheck disable=SC2086
        scancel $ids 2>/dev/null || true
        for _ in $(seq 50); do [ -z "$(squeue -h 2>/dev/null || true)" ] && break; sleep 0.2; done
      fi
    fi
  fi
  stop_pidfile "$DIR/slurmd.pid" slurmd
  stop_pidfile "$DIR/slurmctld.pid" slurmctld
  stop_pidfile "$DIR/munge/munged.pid" munged
  rm -rf "$DIR"
}

start() {
  [ "$(id -u)" = 0 ] || die "needs root (slurmd runs jobs as their submitter, munged as the munge user)"
  install_if_missing
  id munge >/dev/null 2>&1 || die "the munge user does not exist (the munge package creates it)"
  [ -f "$DIR/slurmctld.pid" ] && stop
  rm -rf "$DIR"
  mkdir -p "$DIR"/{state,spool,munge}
  chmod 755 "$DIR"
  local host
  host=$(hostname -s)

  # munge: its own key, socket and pid file in the folder, run as the munge user.
  chown munge: "$DIR/munge"
  chmod 700 "$DIR/munge"
  dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  chown munge: "$DIR/munge/munge.key"
  chmod 400 "$DIR/munge/munge.key"
  chmod 711 "$DIR/munge"
  runuser -u munge -- munged --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.socket" \
    --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" --seed-file="$DIR/munge/munged.seed" \
    || die "munged did not start: $(tail -n 5 "$DIR/munge/munged.log" 2>/dev/null)"

  local node
  node=$(slurmd -C | head -n 1 | sed 's/ *UpTime=.*//')
  [ -n "$node" ] || die "slurmd -C printed no node line"
  cat > "$DIR/slurm.conf" <<CONF
# Written by gnnaudit's scripts/slurm-local.sh: a one-node cluster, no accounting.
ClusterName=gnnaudit-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
DependencyParameters=kill_invalid_depend
MaxArraySize=1001
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$DIR/slurm.conf"
  slurmctld -c -i || die "slurmctld did not start: $(tail -n 5 "$DIR/slurmctld.log" 2>/dev/null)"
  slurmd || die "slurmd did not start: $(tail -n 5 "$DIR/slurmd.log" 2>/dev/null)"
  local state=""
  for _ in $(seq 150); do
    state=$(sinfo -h -N -o %T 2>/dev/null | head -n 1 || true)
    [ "$state" = idle ] && break
    sleep 0.2
  done
  if [ "$state" != idle ]; then
    echo "slurm-local: the node is not idle after 30 s (state '${state:-unknown}'); logs:" >&2
    tail -n 20 "$DIR/slurmctld.log" "$DIR/slurmd.log" >&2 2>/dev/null || true
    stop
    exit 3
  fi
  echo "slurm-local: one-node Slurm is up (node $host, state idle)" >&2
  echo "SLURM_CONF=$SLURM_CONF"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
