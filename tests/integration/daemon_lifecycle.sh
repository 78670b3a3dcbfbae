# daemon_lifecycle: parleyd serve on its embedded PostgreSQL, as a user runs
# it: first start creates cluster and schema; SIGTERM exits 0 within 10 s
# leaving no postgres; restart reuses; SIGKILL leaves a cluster the next
# start joins; a stale postmaster.pid; two daemons on one directory; migrate
# beside a running daemon; signals during start-up; a second signal; a
# part failing to start after others did.
source "$(dirname "$0")/lib.sh"
D=$TMP/d

stop_ok() { # stop_ok PID LOG: SIGTERM, exit 0 within 10 s
  kill -TERM "$1"
  wait_exit "$1" 10
  [ "$EXIT_RC" = 0 ] || { cat "$2" >&2; fail "exit status $EXIT_RC after SIGTERM"; }
}

# 1. First start: cluster, schema, ready; SIGTERM: clean exit, no postgres.
start_daemon "$TMP/1.log" --data-dir "$D" serve
wait_log "$TMP/1.log" "ready (schema version" 120
grep -q "creating the embedded cluster" "$TMP/1.log" || fail "no initdb on first start"
grep -q "applied migration 001_" "$TMP/1.log" || fail "schema not created"
cluster_running "$D" || fail "cluster not running"
[ -S "$D/pg/run/.s.PGSQL.5432" ] || fail "no socket in the data directory"
grep -q "listen_addresses = ''" "$D/pg/data/parley.conf" || fail "TCP listener configured"
stop_ok "$DPID" "$TMP/1.log"
no_postgres_for "$D" || fail "postgres left running after SIGTERM"
cluster_running "$D" && fail "pg_ctl still sees the cluster"

# 2. Restart reuses the cluster (no initdb, no migration); SIGINT works too.
start_daemon "$TMP/2.log" --data-dir "$D"
wait_log "$TMP/2.log" "ready (schema version"
grep -q "creating the embedded cluster" "$TMP/2.log" && fail "initdb ran again"
grep -q "applied migration" "$TMP/2.log" && fail "migration applied twice"
kill -INT "$DPID"
wait_exit "$DPID" 10
[ "$EXIT_RC" = 0 ] || fail "SIGINT exit status $EXIT_RC"
no_postgres_for "$D" || fail "postgres left running after SIGINT"

# 3. SIGKILL leaves the cluster running; the next start joins and stops it.
start_daemon "$TMP/3.log" --data-dir "$D" serve
wait_log "$TMP/3.log" "ready"
kill -9 "$DPID"
wait_exit "$DPID" 5
cluster_running "$D" || fail "cluster should survive SIGKILL of parleyd"
start_daemon "$TMP/3b.log" --data-dir "$D" serve
wait_log "$TMP/3b.log" "ready"
grep -q "joining the embedded cluster already running" "$TMP/3b.log" || fail "did not join"
stop_ok "$DPID" "$TMP/3b.log"
no_postgres_for "$D" || fail "postgres left after joining daemon stopped"

# 4. Stale postmaster.pid: parleyd and postmaster both killed with SIGKILL.
start_daemon "$TMP/4.log" --data-dir "$D" serve
wait_log "$TMP/4.log" "ready"
pm=$(head -1 "$D/pg/data/postmaster.pid")
kill -9 "$DPID" "$pm"
wait_exit "$DPID" 5
[ -f "$D/pg/data/postmaster.pid" ] || fail "expected a stale pid file"
start_daemon "$TMP/4b.log" --data-dir "$D" serve
wait_log "$TMP/4b.log" "ready" 90
stop_ok "$DPID" "$TMP/4b.log"
no_postgres_for "$D" || fail "postgres left after stale-pid recovery"

# 5. Two daemons on one directory, and migrate beside them.
start_daemon "$TMP/5a.log" --data-dir "$D" serve
A=$DPID
wait_log "$TMP/5a.log" "ready"
start_daemon "$TMP/5b.log" --data-dir "$D" serve
B=$DPID
wait_log "$TMP/5b.log" "ready"
grep -q "joining the embedded cluster" "$TMP/5b.log" || fail "second daemon did not join"
"$PARLEYD" --data-dir "$D" migrate 2>"$TMP/5m.log" || { cat "$TMP/5m.log"; fail "migrate"; }
grep -q "schema is at version [0-9]* (0 migrations applied)" "$TMP/5m.log" || fail "migrate output"
grep -q "still uses the embedded cluster" "$TMP/5m.log" || fail "migrate should leave it up"
cluster_running "$D" || fail "migrate stopped a cluster in use"
stop_ok "$A" "$TMP/5a.log"
cluster_running "$D" || fail "first daemon stopped a cluster the second uses"
kill -0 "$B" || fail "second daemon died"
stop_ok "$B" "$TMP/5b.log"
no_postgres_for "$D" || fail "postgres left after both daemons stopped"

# 6. migrate alone starts the cluster, migrates, and stops it again.
"$PARLEYD" --data-dir "$D" migrate 2>"$TMP/6.log" || { cat "$TMP/6.log"; fail "migrate alone"; }
no_postgres_for "$D" || fail "migrate left postgres running"

# 7. SIGTERM during first start-up: finish starting, then stop cleanly.
E=$TMP/e
start_daemon "$TMP/7.log" --data-dir "$E" serve
wait_log "$TMP/7.log" "creating the embedded cluster"
kill -TERM "$DPID"
wait_exit "$DPID" 60
[ "$EXIT_RC" = 0 ] || { cat "$TMP/7.log"; fail "SIGTERM during start-up: exit $EXIT_RC"; }
no_postgres_for "$E" || fail "postgres left after SIGTERM during start-up"

# 7b. Ctrl-C in a terminal reaches the whole process group: initdb must not
# die of it; the start-up stops cleanly all the same.
G=$TMP/g
setsid "$PARLEYD" --data-dir "$G" serve 2>"$TMP/7b.log" &
DPID=$!
PIDS+=("$DPID")
wait_log "$TMP/7b.log" "creating the embedded cluster"
sleep 0.3
kill -INT -- -"$DPID"
wait_exit "$DPID" 60
[ "$EXIT_RC" = 0 ] || { cat "$TMP/7b.log"; fail "Ctrl-C during initdb: exit $EXIT_RC"; }
no_postgres_for "$G" || fail "postgres left after Ctrl-C during start-up"

# 8. A second signal exits at once (status 3); the next start recovers.
F=$TMP/f
start_daemon "$TMP/8.log" --data-dir "$F" serve
wait_log "$TMP/8.log" "creating the embedded cluster"
kill -TERM "$DPID"
sleep 0.2
kill -TERM "$DPID" 2>/dev/null || true
wait_exit "$DPID" 30
[ "$EXIT_RC" = 3 ] || fail "second signal: exit $EXIT_RC, expected 3"
start_daemon "$TMP/8b.log" --data-dir "$F" serve
wait_log "$TMP/8b.log" "ready" 120
stop_ok "$DPID" "$TMP/8b.log"
no_postgres_for "$F" || fail "postgres left after recovery"

# 9. A data directory that cannot be created is a clear error, exit 1.
rc=0
"$PARLEYD" --data-dir /proc/parley-nope serve 2>"$TMP/9.log" || rc=$?
[ "$rc" = 1 ] || fail "bad data dir exit $rc"
grep -q "/proc/parley-nope" "$TMP/9.log" || fail "error does not name the directory"

# 10. A part that fails to start after others did (an endpoint that cannot
# be bound): exit 1 with the part and its reason, every part started before
# closed (the embedded cluster stopped), nothing printed as "(null)".
rc=0
"$PARLEYD" --data-dir "$D" serve --listen "unix:$TMP/no-such-dir/x.sock" 2>"$TMP/10.log" || rc=$?
[ "$rc" = 1 ] || { cat "$TMP/10.log" >&2; fail "unbindable endpoint: exit $rc, expected 1"; }
grep -q "ERROR \[main\] MCP endpoints: unix:$TMP/no-such-dir/x.sock: " "$TMP/10.log" ||
  { cat "$TMP/10.log" >&2; fail "the error does not name the endpoint"; }
grep -q "(null)" "$TMP/10.log" && fail "(null) in the log"
grep -q "embedded cluster stopped" "$TMP/10.log" || fail "the cluster was not stopped"
no_postgres_for "$D" || fail "postgres left after a failed start"

echo "daemon_lifecycle: ok"
