#!/bin/bash
# slurm_cluster.sh start|stop DIR
# A one-machine Slurm cluster for the launcher tests: its own munged (own
# key and socket, so nothing of the host's munge is touched), slurmctld and
# slurmd on 127.0.0.1 with their own ports, state, spool, logs and pid files,
# all under DIR.  `start` always exits 0: when a piece cannot start it writes
# the exact reason to DIR/skip (the srun tests print it as SKIPPED) and stops
# what it started.  `stop` ends the daemons by their pid files and removes DIR.
set -u
action=$1
dir=$2
limit=20  # seconds a daemon may take to come up or go down

pid_of() { [ -s "$1" ] && cat "$1"; }

stop_daemon() {  # pid-file
  local pid
  pid=$(pid_of "$1") || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq $((limit * 10))); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null
}

stop_all() {
  if [ -f "$dir/slurm.conf" ] && [ -s "$dir/slurmctld.pid" ]; then
    SLURM_CONF=$dir/slurm.conf timeout 5 scancel --quiet --user="$(id -un)" 2>/dev/null
  fi
  stop_daemon "$dir/slurmd.pid"
  stop_daemon "$dir/slurmctld.pid"
  stop_daemon "$dir/munge/munged.pid"
}

skip() {  # reason
  echo "$1" >"$dir/skip"
  echo "local Slurm not started: $1"
  stop_all
  exit 0
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

case "$action" in
  stop)
    [ -d "$dir" ] || exit 0
    stop_all
    rm -rf "$dir"
    echo "local Slurm stopped, $dir removed"
    exit 0
    ;;
  start) ;;
  *)
    echo "usage: slurm_cluster.sh start|stop DIR" >&2
    exit 2
    ;;
esac

# A previous run killed before its cleanup: stop its daemons first.
[ -d "$dir" ] && stop_all
rm -rf "$dir"
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir" "$dir/munge"

for tool in munged mungekey slurmctld slurmd srun sinfo; do
  command -v "$tool" >/dev/null || skip "$tool not found (Debian packages slurm-wlm, munge)"
done

# munge: a key of our own and a socket of our own.
mungekey -c -k "$dir/munge/munge.key" 2>"$dir/munge/mungekey.err" ||
  skip "mungekey -c failed: $(cat "$dir/munge/mungekey.err")"
chmod 600 "$dir/munge/munge.key"
socket=$dir/munge/munge.socket
munged --force --socket="$socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
  --seed-file="$dir/munge/munged.seed" 2>"$dir/munge/munged.err" ||
  skip "munged did not start: $(cat "$dir/munge/munged.err")"

node_line=$(slurmd -C 2>/dev/null | head -1)
case "$node_line" in
  NodeName=*) ;;
  *) skip "slurmd -C did not describe this machine" ;;
esac
node=$(echo "$node_line" | sed 's/^NodeName=\([^ ]*\).*/\1/')
ctld_port=$(free_port)
slurmd_port=$(free_port)
cat >"$dir/slurm.conf" <<EOF
ClusterName=tsutest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
InactiveLimit=0
KillWait=5
$node_line NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=10 State=UP OverSubscribe=FORCE
EOF
export SLURM_CONF=$dir/slurm.conf

slurmctld -f "$SLURM_CONF" 2>"$dir/slurmctld.err" ||
  skip "slurmctld did not start: $(cat "$dir/slurmctld.err") $(tail -3 "$dir/slurmctld.log" 2>/dev/null)"
slurmd -f "$SLURM_CONF" 2>"$dir/slurmd.err" ||
  skip "slurmd did not start: $(cat "$dir/slurmd.err") $(tail -3 "$dir/slurmd.log" 2>/dev/null)"

state=
for _ in $(seq $((limit * 5))); do
  state=$(timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null)
  case "$state" in idle*|mixed*|allocated*) break ;; esac
  sleep 0.2
done
case "$state" in
  idle*|mixed*|allocated*) ;;
  *) skip "node $node is '${state:-unknown}' after ${limit} s: $(tail -3 "$dir/slurmctld.log" 2>/dev/null | tr '\n' ' ')" ;;
esac

if ! timeout 10 srun --mpi=list 2>&1 | grep -q pmix; then
  skip "this Slurm has no pmix MPI plug-in (srun --mpi=list: $(timeout 10 srun --mpi=list 2>&1 | tr '\n' ' '))"
fi
echo "local Slurm up: node $node, slurmctld port $ctld_port, slurmd port $slurmd_port"
timeout 10 srun --mpi=list 2>&1
