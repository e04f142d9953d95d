#!/usr/bin/env bash
# Tear down the test cluster started by .ci/slurm-up.sh. Idempotent.
#
#   .ci/slurm-down.sh [STATE_DIR]        (default: $SLURM_STATE or /tmp/fib-slurm)
#
# 1. scancel every job still known to the controller, wait for them to leave
# 2. stop slurmd, slurmctld and (if slurm-up.sh started it) munged, by PID file
# 3. remove the /etc/slurm/slurm.conf symlink slurm-up.sh created
# 4. uninstall snakemake-executor-plugin-slurm from the venv if slurm-up.sh
#    installed it (set FIB_SLURM_KEEP_PLUGIN=1 to keep it)
# Logs stay in STATE_DIR/log. Always exits 0 (prints warnings instead).
set -u -o pipefail

STATE="${1:-${SLURM_STATE:-/tmp/fib-slurm}}"
log() { echo "[slurm-down] $*"; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }
pidof_file() { [ -s "$1" ] && head -n1 "$1" | tr -dc '0-9'; }

if [ ! -d "$STATE" ]; then
    log "no state dir $STATE: nothing to do"
    exit 0
fi
STATE="$(cd "$STATE" && pwd)"
export SLURM_CONF="$STATE/slurm.conf"

stop_pid() {  # name pid
    local name="$1" pid="$2" i
    alive "$pid" || return 0
    kill -TERM "$pid" 2>/dev/null
    for i in $(seq 100); do alive "$pid" || { log "stopped $name (pid $pid)"; return 0; }; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    log "killed $name (pid $pid) with SIGKILL"
}

CTLD_PID="$(pidof_file "$STATE/run/slurmctld.pid")"
SLURMD_PID="$(pidof_file "$STATE/run/slurmd.pid")"

# ---------------------------------------------------------------- jobs
if [ -f "$SLURM_CONF" ] && alive "$CTLD_PID" && command -v squeue >/dev/null; then
    jobs="$(timeout 10 squeue -h -t PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED -o %A 2>/dev/null | tr '\n' ' ')"
    if [ -n "${jobs// /}" ]; then
        log "scancel $jobs"
        timeout 10 scancel $jobs 2>/dev/null || true
        for _ in $(seq 50); do
            left="$(timeout 5 squeue -h -t PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED -o %A 2>/dev/null | tr '\n' ' ')"
            [ -z "${left// /}" ] && break
            sleep 0.2
        done
        [ -n "${left// /}" ] && log "WARNING: jobs still active after scancel: $left"
    fi
fi

# ---------------------------------------------------------------- daemons
stop_pid slurmd "$SLURMD_PID"
stop_pid slurmctld "$CTLD_PID"
if [ -f "$STATE/run/munged.pid.ours" ]; then
    stop_pid munged "$(pidof_file "$STATE/run/munged.pid.ours")"
    rm -f "$STATE/run/munged.pid.ours"
fi
rm -f "$STATE/run/slurmd.pid" "$STATE/run/slurmctld.pid"

# job steps whose slurmd is gone (only possible if scancel above failed)
for p in /proc/[0-9]*; do
    exe="$(readlink "$p/exe" 2>/dev/null)" || continue
    [ "$exe" = /usr/sbin/slurmstepd ] && log "WARNING: slurmstepd pid ${p#/proc/} still running"
done

# ---------------------------------------------------------------- config link
if [ -f "$STATE/etc_conf_link" ]; then
    if [ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" = "$(cat "$STATE/etc_conf_link")" ]; then
        rm -f /etc/slurm/slurm.conf
        [ -f "$STATE/etc_conf_backup" ] && [ -e /etc/slurm/slurm.conf.fib-backup ] \
            && mv /etc/slurm/slurm.conf.fib-backup /etc/slurm/slurm.conf
    fi
    rm -f "$STATE/etc_conf_link" "$STATE/etc_conf_backup"
fi

# ---------------------------------------------------------------- plugin
if [ -f "$STATE/plugin_installed_by_slurm_up" ] && [ "${FIB_SLURM_KEEP_PLUGIN:-0}" != 1 ]; then
    venv="$(cat "$STATE/plugin_installed_by_slurm_up")"
    if [ -x "$venv/bin/python" ]; then
        "$venv/bin/python" -m pip uninstall -y -q snakemake-executor-plugin-slurm >/dev/null 2>&1 \
            && log "uninstalled snakemake-executor-plugin-slurm from $venv"
    fi
    rm -f "$STATE/plugin_installed_by_slurm_up"
fi
rm -f "$STATE/started"
log "down (logs kept in $STATE/log)"
exit 0
