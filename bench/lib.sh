# Shared by the bench scripts: process bookkeeping (every process started is
# killed on exit), waiting for a port, and the fixed-answer nginx upstream.
# The sourcing script defines log/die, CPU, NICE and LOGDIR (where each
# process's output goes) before calling these.

# bench_processes PREFIX: a temp folder $TMP and a trap that kills every
# process started with `start`, then removes $TMP.
bench_processes() {
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    PIDS=()
    trap bench_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

bench_cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for _ in $(seq 50); do
        local alive=0
        for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        ((alive)) || break
        sleep 0.1
    done
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
    exit "$rc"
}

# start NAME CMD... : pinned to $CPU, in the background, logged to
# $LOGDIR/NAME.log; sets LAST_PID (no command substitution: PIDS must be
# updated in this shell).
start() {
    local name=$1; shift
    nice -n "${NICE:-0}" taskset -c "$CPU" "$@" >"$LOGDIR/$name.log" 2>&1 &
    LAST_PID=$!
    PIDS+=("$LAST_PID")
}

# wait_port PORT PID NAME: until PORT on 127.0.0.1 accepts, or PID died.
wait_port() {
    local port=$1 pid=$2 name=$3
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || { cat "$LOGDIR/$name.log" >&2; die "$name exited"; }
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.1
    done
    die "$name did not listen on $port"
}

# nginx_conf PORT: an nginx.conf (one worker, keep-alive, no access log)
# answering 200 "ok" on 127.0.0.1:PORT, its state under $TMP.
nginx_conf() {
    cat <<EOF
worker_processes 1;
daemon off;
pid $TMP/nginx.pid;
error_log $TMP/nginx-error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_timeout 300s;
    keepalive_requests 100000000;
    client_body_temp_path $TMP/nginx-body;
    proxy_temp_path $TMP/nginx-proxy;
    fastcgi_temp_path $TMP/nginx-fastcgi;
    uwsgi_temp_path $TMP/nginx-uwsgi;
    scgi_temp_path $TMP/nginx-scgi;
    default_type text/plain;
    server {
        listen 127.0.0.1:$1;
        location / { return 200 "ok"; }
    }
}
EOF
}

# defend_conf MAX_CONCURRENT: a `firedrill defend` config whose breaker
# and bulkhead stay out of the way of a benchmark (every call succeeds; at
# most MAX_CONCURRENT calls are in flight).
defend_conf() {
    cat <<EOF
routes:
  api:
    match: /*
    breaker: { model: window, sliding_window_type: count, sliding_window_size: 100, minimum_calls: 20, failure_rate_threshold: 50%, wait_in_open: 10s }
    bulkhead: { max_concurrent: $1, max_wait: 1s }
EOF
}

# The `system:` drill bench/soak.sh and bench/system-memory.sh share: a
# user's service (a `firedrill defend`) on $SERVICE_PORT calls its
# dependency through the drill's fault proxy on $DEPENDENCY_PORT, which
# flaps: FLAP_FAULT answers 503 for 4 s of every 12 s from 5 s on.
FLAP_FAULT="{ name: inventory-flap, match: /inventory/*, status: { code: 503 }, at: 5s, pattern: { up: 8s, down: 4s } }"

# service_defense_conf: the service's defense line, a consecutive breaker
# (5 failures, 3 successes, wait 2s) with a static fallback.
service_defense_conf() {
    cat <<EOF
timeout: 1s
routes:
  inventory:
    match: /inventory/*
    breaker: { model: consecutive, failure_threshold: 5, success_threshold: 3, wait_in_open: 2s }
    fallback: { static: { status: 200, body: '{"items":[]}' } }
EOF
}

# system_drill_head NAME SECONDS: the drill's file up to its dependencies;
# its load, faults and expectations follow.
system_drill_head() {
    cat <<EOF
name: $1
seed: 5
duration: ${2}s
clock: real
system:
  url: http://127.0.0.1:$SERVICE_PORT
  breakers:
    inventory: { dependency: inventory, wait_in_open: 2s, probes: 3 }
dependencies:
  inventory:
    listen: 127.0.0.1:$DEPENDENCY_PORT
    builtin:
      routes:
        - { path: /inventory/*, latency: 2ms, body: '{"items":["sku-1"]}' }
EOF
}

# median / pctl P: of a column of numbers on stdin (pctl: nearest rank).
median() { sort -g | awk '{a[NR]=$1} END{if(NR==0){print "nan"; exit} if(NR%2)print a[(NR+1)/2]; else printf "%.6g\n",(a[NR/2]+a[NR/2+1])/2}'; }
pctl() { sort -g | awk -v p="$1" '{a[NR]=$1} END{if(NR==0){print "nan";exit} i=int((p/100)*NR+0.999999); if(i<1)i=1; if(i>NR)i=NR; print a[i]}'; }

# The share of core $CPU that other processes take: busy jiffies of the
# core from /proc/stat (user, nice, system, and steal: time the hypervisor
# gave to other guests) minus the CPU time of every process started with
# `start` (and their children) and of the measured command itself. Interrupt
# time is left out: on loopback it is mostly our own packets.
HZ=$(getconf CLK_TCK)
core_busy() { awk -v c="cpu$CPU" '$1==c{print $2+$3+$4+$9}' /proc/stat; }
ours_ticks() {
    local p q sum=0 kids
    for p in "${PIDS[@]}"; do
        kids=$(cat /proc/"$p"/task/*/children 2>/dev/null || true)
        for q in "$p" $kids; do
            [[ -r /proc/$q/stat ]] || continue
            sum=$((sum + $(awk '{sub(/.*\) /,""); print $12+$13}' /proc/"$q"/stat)))
        done
    done
    echo "$sum"
}
# proc_cpu_ns PID: nanoseconds one process (all its threads) has run on a
# CPU (/proc/PID/task/*/schedstat; a clock tick is 10 ms, too coarse for
# the few thousand requests of a paced run).
proc_cpu_ns() { awk '{n+=$1} END{printf "%.0f\n", n}' /proc/"$1"/task/*/schedstat; }

# measured OUTFILE CMD... : runs CMD pinned to $CPU (stdout+stderr to
# OUTFILE, wall/user/sys seconds to OUTFILE.time) and sets FOREIGN to the
# share (%) of the core other processes took meanwhile. Returns CMD's status.
measured() {
    local f=$1 b0 b1 o0 o1 rc=0; shift
    b0=$(core_busy); o0=$(ours_ticks)
    local TIMEFORMAT='%R %U %S'
    { time nice -n "${NICE:-0}" taskset -c "$CPU" "$@" >"$f" 2>&1; } 2>"$f.time" || rc=$?
    b1=$(core_busy); o1=$(ours_ticks)
    FOREIGN=$(awk -v b=$((b1 - b0)) -v o=$((o1 - o0)) -v hz="$HZ" \
        '{v=(b-o-($2+$3)*hz)/(hz*$1)*100; if(v<0)v=0; if(v>100)v=100; printf "%.0f", v}' "$f.time")
    return "$rc"
}

# firedrill_binary PROFILE_NAME: sets FIREDRILL (unless given) to a build
# of this checkout, `cargo build --profile PROFILE_NAME --locked` unless
# BUILD=0; the build log goes to $OUT/build.log.
firedrill_binary() {
    [[ -n ${FIREDRILL:-} ]] && return 0
    local tgt=${CARGO_TARGET_DIR:-$REPO/target}
    if ((${BUILD:-1})); then
        log "building firedrill ($1) into $tgt"
        (cd "$REPO" && CARGO_TARGET_DIR=$tgt cargo build --profile "$1" --locked) >"$OUT/build.log" 2>&1 ||
            die "cargo build failed, see $OUT/build.log"
    fi
    FIREDRILL=$tgt/$1/firedrill
}

# need_tools TOOL...: installs the missing ones with apt-get (packages of
# the same name) unless SKIP_INSTALL=1.
need_tools() {
    local t missing=()
    for t in "$@"; do command -v "$t" >/dev/null 2>&1 || [[ -x /usr/sbin/$t ]] || missing+=("$t"); done
    ((${#missing[@]})) || return 0
    ((${SKIP_INSTALL:-0} == 0)) || die "missing: ${missing[*]} (SKIP_INSTALL=1)"
    log "installing: ${missing[*]}"
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
}
