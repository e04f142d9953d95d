#!/usr/bin/env bash
# Bring up a single-node SLURM cluster on localhost for tests / CI.
#
#   .ci/slurm-up.sh [STATE_DIR]          (default: $SLURM_STATE or /tmp/fib-slurm)
#
# - installs slurmctld slurmd slurm-client munge via apt if missing (needs root)
# - writes slurm.conf / gres.conf / cgroup.conf into STATE_DIR and points the
#   client tools at it (symlink /etc/slurm/slurm.conf -> STATE_DIR/slurm.conf)
# - creates two fake GPUs (character devices made with mknod) -> node Gres=gpu:2
# - partitions: cpu (default) and gpu, both on the one node
# - no accounting DB: use `slurm-status-command: squeue`; MinJobAge is high so
#   finished jobs stay visible in squeue / `scontrol show job` for 15 min
# - installs snakemake-executor-plugin-slurm into the project venv
#   ($FIB_VENV, default <repo>/.venv) unless FIB_SLURM_SKIP_PLUGIN=1; slurm-down.sh
#   uninstalls it again if this script installed it (an installed plugin with
#   slurm-client present but no controller makes every snakemake call ~10 s slower)
# - waits until `sinfo` reports the node idle (timeout $FIB_SLURM_UP_TIMEOUT, 60 s)
#
# Exit 0 and a line "SLURM_UP" on success. On any failure: message on stdout
# ("SLURM_UP_FAILED: <why>"), daemons started here are stopped again, exit 3,
# so callers can skip with the message.
#
# Env knobs: SLURM_STATE, FIB_VENV, FIB_SLURM_SKIP_PLUGIN=1, FIB_SLURM_PLUGIN_SPEC,
#   FIB_SLURM_UP_TIMEOUT, FIB_SLURM_CGROUP_PLUGIN (cgroup/v1|cgroup/v2, default: detect),
#   FIB_SLURM_CTLD_PORT (6817), FIB_SLURM_SLURMD_PORT (6818), FIB_SLURM_NO_APT=1.
set -u -o pipefail

T0=$(date +%s.%N)
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
STATE="${1:-${SLURM_STATE:-/tmp/fib-slurm}}"
VENV="${FIB_VENV:-$REPO/.venv}"
PLUGIN_SPEC="${FIB_SLURM_PLUGIN_SPEC:-snakemake-executor-plugin-slurm>=2.0}"
TIMEOUT="${FIB_SLURM_UP_TIMEOUT:-60}"
CTLD_PORT="${FIB_SLURM_CTLD_PORT:-6817}"
SLURMD_PORT="${FIB_SLURM_SLURMD_PORT:-6818}"

log() { echo "[slurm-up] $*"; }
fail() {
    echo "SLURM_UP_FAILED: $*"
    if [ -d "$STATE/log" ]; then
        for f in "$STATE"/log/slurmctld.log "$STATE"/log/slurmd.log; do
            [ -s "$f" ] && { echo "--- tail $f"; tail -n 15 "$f"; }
        done
    fi
    # stop whatever we started (keeps the logs in $STATE/log)
    if [ -f "$STATE/started" ]; then
        SLURM_STATE="$STATE" FIB_SLURM_KEEP_PLUGIN="${FIB_SLURM_KEEP_PLUGIN:-0}" \
            bash "$HERE/slurm-down.sh" "$STATE" >/dev/null 2>&1 || true
    fi
    exit 3
}
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pidof_file() { [ -s "$1" ] && head -n1 "$1" | tr -dc '0-9'; }

[ "$(id -u)" = 0 ] || fail "must run as root (apt-get, mknod, slurmd need it)"
mkdir -p "$STATE" || fail "cannot create state dir $STATE"
STATE="$(cd "$STATE" && pwd)"

# ---------------------------------------------------------------- packages
missing=()
for b in /usr/sbin/slurmctld:slurmctld /usr/sbin/slurmd:slurmd /usr/bin/sinfo:slurm-client \
         /usr/sbin/munged:munge; do
    [ -x "${b%%:*}" ] || missing+=("${b##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "${FIB_SLURM_NO_APT:-0}" = 1 ] && fail "missing packages ${missing[*]} and FIB_SLURM_NO_APT=1"
    command -v apt-get >/dev/null || fail "missing ${missing[*]} and no apt-get on this system"
    log "installing ${missing[*]} (apt)"
    export DEBIAN_FRONTEND=noninteractive
    if ! apt-get install -y -q --no-install-recommends "${missing[@]}" >"$STATE/apt.log" 2>&1; then
        log "apt-get install failed, retrying after apt-get update"
        apt-get update -q >>"$STATE/apt.log" 2>&1
        apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$STATE/apt.log" 2>&1 \
            || fail "apt-get install ${missing[*]} failed (see $STATE/apt.log: $(tail -n 2 "$STATE/apt.log" | tr '\n' ' '))"
    fi
fi
SLURM_VERSION="$(/usr/sbin/slurmd -V 2>/dev/null | awk '{print $2}')"   # e.g. 22.05.8
log "using slurm ${SLURM_VERSION:-?}"

# ---------------------------------------------------------------- snakemake plugin
if [ "${FIB_SLURM_SKIP_PLUGIN:-0}" != 1 ] && [ -x "$VENV/bin/python" ]; then
    if ! "$VENV/bin/python" -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('snakemake_executor_plugin_slurm') is None)" 2>/dev/null; then
        log "installing '$PLUGIN_SPEC' into $VENV"
        "$VENV/bin/python" -m pip install -q "$PLUGIN_SPEC" >"$STATE/pip.log" 2>&1 \
            || fail "pip install '$PLUGIN_SPEC' into $VENV failed (see $STATE/pip.log)"
        echo "$VENV" >"$STATE/plugin_installed_by_slurm_up"
    fi
fi

# ---------------------------------------------------------------- already up?
if [ -f "$STATE/slurm.conf" ] && alive "$(pidof_file "$STATE/run/slurmctld.pid")" \
   && alive "$(pidof_file "$STATE/run/slurmd.pid")" \
   && SLURM_CONF="$STATE/slurm.conf" sinfo -h -o %T 2>/dev/null | grep -qxE "idle|mixed|allocated|completing"; then
    log "cluster in $STATE already running"
    echo "SLURM_UP_SECONDS=$(elapsed)"
    echo "SLURM_UP"
    exit 0
fi

# ---------------------------------------------------------------- layout
SLURM_USER=root
id slurm >/dev/null 2>&1 && SLURM_USER=slurm
mkdir -p "$STATE"/{run,log,ctld,spool,dev} || fail "cannot create dirs in $STATE"
chown -R "$SLURM_USER" "$STATE/ctld" "$STATE/log" "$STATE/run"
chmod 755 "$STATE" "$STATE/run" "$STATE/log"
: >"$STATE/started"   # marker: slurm-down.sh may act on this dir

NODE="$(hostname -s)"
[ -n "$NODE" ] || fail "empty hostname"

# Hardware as slurmd sees it; configuring more than that would drain the node.
HW="$(/usr/sbin/slurmd -C 2>/dev/null | head -n1)"
CPUS="$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$HW")"
MEM="$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$HW")"
[ -n "$CPUS" ] || CPUS="$(nproc)"
[ -n "$MEM" ] || MEM="$(awk '/MemTotal/{print int($2/1024)}' /proc/meminfo)"
MEM=$(( MEM * 9 / 10 ))
[ "$MEM" -gt 100 ] || MEM=1000
log "node $NODE: CPUs=$CPUS RealMemory=$MEM"

# Fake GPUs: gres File= must be character devices (regular files are rejected).
GPU_FILES=""
if rm -f "$STATE/dev/nvidia0" "$STATE/dev/nvidia1" \
   && mknod "$STATE/dev/nvidia0" c 195 0 2>/dev/null && mknod "$STATE/dev/nvidia1" c 195 1 2>/dev/null; then
    GPU_FILES="File=$STATE/dev/nvidia[0-1]"
else
    log "WARNING: mknod failed; fake GPUs without device files (CUDA_VISIBLE_DEVICES will not be set)"
fi

# cgroup plugin: slurmd reads cgroup.conf even with proctrack/linuxproc + task/none.
CG="${FIB_SLURM_CGROUP_PLUGIN:-}"
if [ -z "$CG" ]; then
    if [ -d /sys/fs/cgroup/freezer ] || [ -d /sys/fs/cgroup/cpuset ] && [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
        CG=cgroup/v1
    elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
        CG=cgroup/v2
    else
        CG=cgroup/v1
    fi
fi

cat >"$STATE/slurm.conf" <<EOF
# generated by .ci/slurm-up.sh -- single node test cluster, no accounting
ClusterName=fibtest
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=$SLURM_USER
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
ReturnToService=2
# keep finished jobs visible to squeue (the plugin's status command) for 15 min
MinJobAge=900
MaxJobCount=100000
SchedulerType=sched/backfill
# batch_sched_delay=0: start the next batch job ~1 s after one ends (default 3 s)
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
# jobs without --mem would otherwise get the whole node memory (one job at a time)
DefMemPerCPU=500
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/spool
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM Gres=gpu:2 State=UNKNOWN
PartitionName=cpu Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$NODE MaxTime=INFINITE State=UP
EOF
if [ -n "$GPU_FILES" ]; then
    echo "NodeName=$NODE Name=gpu $GPU_FILES" >"$STATE/gres.conf"
else
    echo "NodeName=$NODE Name=gpu Count=2" >"$STATE/gres.conf"
fi
cat >"$STATE/cgroup.conf" <<EOF
CgroupPlugin=$CG
CgroupAutomount=no
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainDevices=no
EOF
# cgroup/v2 wants a systemd scope for slurmd; containers/CI runners often lack
# one. 23.02+ can be told to do without (22.05 does not know the key; cgroup/v2
# there is untested: set FIB_SLURM_CGROUP_PLUGIN if slurmd dies).
if [ "$CG" = cgroup/v2 ] && [ "$(printf '%s\n' 23.02 "${SLURM_VERSION:-0}" | sort -V | head -n1)" = 23.02 ]; then
    echo "IgnoreSystemd=yes" >>"$STATE/cgroup.conf"
fi
chmod 644 "$STATE"/*.conf

# Client tools (sinfo, sbatch, ... also when called by snakemake) read
# /etc/slurm/slurm.conf unless SLURM_CONF is set: point it at our config.
mkdir -p /etc/slurm
if [ -e /etc/slurm/slurm.conf ] && [ ! -L /etc/slurm/slurm.conf ]; then
    mv /etc/slurm/slurm.conf "/etc/slurm/slurm.conf.fib-backup" && echo backup >"$STATE/etc_conf_backup"
fi
ln -sfn "$STATE/slurm.conf" /etc/slurm/slurm.conf
echo "$STATE/slurm.conf" >"$STATE/etc_conf_link"
export SLURM_CONF="$STATE/slurm.conf"

# ---------------------------------------------------------------- munge
MUNGE_PIDFILE=/run/munge/munged.pid
if alive "$(pidof_file $MUNGE_PIDFILE)"; then
    log "munged already running (pid $(pidof_file $MUNGE_PIDFILE)), not managed by us"
else
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    if [ ! -s /etc/munge/munge.key ]; then
        if [ -x /usr/sbin/mungekey ]; then /usr/sbin/mungekey -c -f >/dev/null 2>&1
        else dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 2>/dev/null; fi
    fi
    if id munge >/dev/null 2>&1; then
        chown munge:munge /run/munge /var/log/munge /var/lib/munge /etc/munge /etc/munge/munge.key
        chmod 400 /etc/munge/munge.key
        runuser -u munge -- /usr/sbin/munged >"$STATE/log/munged.start" 2>&1 \
            || fail "munged did not start: $(cat "$STATE/log/munged.start")"
    else
        /usr/sbin/munged --force >"$STATE/log/munged.start" 2>&1 \
            || fail "munged did not start: $(cat "$STATE/log/munged.start")"
    fi
    for _ in $(seq 50); do alive "$(pidof_file $MUNGE_PIDFILE)" && break; sleep 0.1; done
    alive "$(pidof_file $MUNGE_PIDFILE)" || fail "munged pid file $MUNGE_PIDFILE missing"
    cp "$MUNGE_PIDFILE" "$STATE/run/munged.pid.ours"
fi
munge -n </dev/null | unmunge >/dev/null 2>&1 || fail "munge round trip failed"

# ---------------------------------------------------------------- daemons
for d in slurmctld slurmd; do
    p="$(pidof_file "$STATE/run/$d.pid")"
    if alive "$p"; then kill "$p"; sleep 1; fi
done
if command -v ss >/dev/null && ss -ltn 2>/dev/null | grep -qE ":($CTLD_PORT|$SLURMD_PORT)\b"; then
    fail "port $CTLD_PORT or $SLURMD_PORT already in use (another slurm running?); set FIB_SLURM_CTLD_PORT/FIB_SLURM_SLURMD_PORT"
fi
/usr/sbin/slurmctld -c -f "$STATE/slurm.conf" >"$STATE/log/slurmctld.start" 2>&1 \
    || fail "slurmctld did not start: $(cat "$STATE/log/slurmctld.start")"
/usr/sbin/slurmd -f "$STATE/slurm.conf" -N "$NODE" >"$STATE/log/slurmd.start" 2>&1 \
    || fail "slurmd did not start: $(cat "$STATE/log/slurmd.start")"

# ---------------------------------------------------------------- wait for idle
deadline=$(( $(date +%s) + TIMEOUT ))
state=""
while [ "$(date +%s)" -lt "$deadline" ]; do
    alive "$(pidof_file "$STATE/run/slurmctld.pid")" || { sleep 0.5; alive "$(pidof_file "$STATE/run/slurmctld.pid")" || fail "slurmctld died"; }
    alive "$(pidof_file "$STATE/run/slurmd.pid")" || { sleep 0.5; alive "$(pidof_file "$STATE/run/slurmd.pid")" || fail "slurmd died"; }
    state="$(sinfo -h -N -n "$NODE" -o %T 2>/dev/null | sort -u | tr '\n' ' ')"
    case "$state" in
        "idle ") break ;;
        *drain*|*down*|*fail*) : ;;   # may still recover (ReturnToService=2); keep polling
    esac
    sleep 0.3
done
if [ "$state" != "idle " ]; then
    reason="$(sinfo -h -R -o '%T: %E' 2>/dev/null | head -n 3 | tr '\n' ' ')"
    fail "node not idle after ${TIMEOUT}s (state: '${state:-unreachable}' ${reason})"
fi

log "slurm $SLURM_VERSION ($CG), node $NODE idle; partitions: $(sinfo -h -o '%P' | tr '\n' ' ')gres: $(sinfo -h -N -o '%G' | head -n1)"
log "state dir $STATE (conf: $STATE/slurm.conf, logs: $STATE/log)"
echo "SLURM_UP_SECONDS=$(elapsed)"
echo "SLURM_UP"
exit 0
