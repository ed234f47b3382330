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
