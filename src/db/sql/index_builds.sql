-- The background index builds (migration 034, schema_index_builds): what
-- the daemon's builder (src/db/index_build.c) asks the database. Migrations
-- declare a build with parley_index_build (migration 034, which owns it:
-- migrations call it before this file is applied); the builder calls
-- parley_index_build_step on its own connection until it answers idle,
-- running the statement each answer hands it, and reads
-- parley_index_build_progress on another connection meanwhile.

-- True when this session holds the builders' advisory lock (a session
-- lock on the key hashtextextended('parley_index_builds', 0)).
CREATE OR REPLACE FUNCTION parley_index_build_lock_held() RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1
        FROM pg_locks l, (SELECT hashtextextended('parley_index_builds', 0) AS k) c
        WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.granted
          AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND l.objsubid = 1
          AND l.classid::bigint = (c.k >> 32) & 4294967295
          AND l.objid::bigint = c.k & 4294967295)
$$;

-- One step of the builder: answers JSON {"state": S, ...}:
--   "idle": nothing is pending (any more);
--   "busy": another session (another daemon's builder) holds the lock
--       and builds; "pending": how many wait;
--   "create": run "sql" (the migration's CREATE INDEX CONCURRENTLY of
--       index "name" on "table"; "version", "attempt"), then step again;
--       "pid" is this session's, whose progress parley_index_build_progress
--       reads;
--   "drop": run "sql" (DROP INDEX CONCURRENTLY of "name": "what" is
--       "invalid", what a failed or stopped build left, or "replaced",
--       the index the valid one "for" replaces), then step again;
--   "gone": the table of build "name" is gone; marked done, step again.
-- Takes the lock (a session lock, kept until the builder's connection
-- closes) when it finds work; a valid index is marked done. Raises 55000
-- when a relation with the index's name exists that is not an index of
-- its table (CREATE INDEX ... IF NOT EXISTS would skip it). The statements
-- are the migration's own text or built here from names it checked.
CREATE OR REPLACE FUNCTION parley_index_build_step() RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    r schema_index_builds;
    tbl regclass;
    idx regclass;
    old regclass;
    valid boolean;
    on_table oid;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM schema_index_builds WHERE state = 'pending') THEN
        RETURN jsonb_build_object('state', 'idle');
    END IF;
    IF NOT parley_index_build_lock_held()
       AND NOT pg_try_advisory_lock(hashtextextended('parley_index_builds', 0)) THEN
        RETURN jsonb_build_object('state', 'busy', 'pending',
                                  (SELECT count(*) FROM schema_index_builds
                                   WHERE state = 'pending'));
    END IF;
    FOR r IN SELECT * FROM schema_index_builds WHERE state = 'pending' ORDER BY seq LOOP
        tbl := to_regclass(r.table_name);
        IF tbl IS NULL THEN
            UPDATE schema_index_builds
            SET state = 'done', finished_at = now(), last_error = 'its table is gone'
            WHERE name = r.name;
            RETURN jsonb_build_object('state', 'gone', 'name', r.name, 'table', r.table_name);
        END IF;
        idx := to_regclass(r.name);
        valid := NULL;
        on_table := NULL;
        SELECT i.indisvalid, i.indrelid INTO valid, on_table FROM pg_index i
        WHERE i.indexrelid = idx;
        IF idx IS NOT NULL AND (valid IS NULL OR on_table <> tbl) THEN
            RAISE EXCEPTION USING ERRCODE = '55000',
                MESSAGE = format('a relation named %s exists that is not an index of %s: '
                                 'rename or drop it (migration %s builds that index)',
                                 r.name, r.table_name, coalesce(r.version::text, '(none)'));
        END IF;
        IF idx IS NULL THEN
            UPDATE schema_index_builds
            SET attempts = attempts + 1, started_at = now()
            WHERE name = r.name;
            RETURN jsonb_build_object('state', 'create', 'name', r.name, 'table', r.table_name,
                                      'sql', r.definition, 'version', r.version,
                                      'attempt', r.attempts + 1, 'pid', pg_backend_pid());
        END IF;
        IF NOT valid THEN
            RETURN jsonb_build_object('state', 'drop', 'what', 'invalid', 'name', r.name,
                                      'table', r.table_name,
                                      'sql', format('DROP INDEX CONCURRENTLY IF EXISTS %I', r.name));
        END IF;
        old := to_regclass(r.replaces);
        IF old IS NOT NULL THEN
            IF NOT EXISTS (SELECT 1 FROM pg_index WHERE indexrelid = old AND indrelid = tbl) THEN
                RAISE EXCEPTION USING ERRCODE = '55000',
                    MESSAGE = format('%s, which index %s replaces, is not an index of %s: '
                                     'rename or drop it', r.replaces, r.name, r.table_name);
            END IF;
            RETURN jsonb_build_object('state', 'drop', 'what', 'replaced', 'name', r.replaces,
                                      'for', r.name, 'table', r.table_name,
                                      'sql', format('DROP INDEX CONCURRENTLY IF EXISTS %I',
                                                    r.replaces));
        END IF;
        UPDATE schema_index_builds SET state = 'done', finished_at = now(), last_error = NULL
        WHERE name = r.name;
    END LOOP;
    RETURN jsonb_build_object('state', 'idle');
END
$$;

-- How far the index build of session p_pid is, as JSON {"phase",
-- "blocks_done", "blocks_total", "tuples_done", "tuples_total",
-- "lockers_done", "lockers_total"}, or NULL when it builds none.
CREATE OR REPLACE FUNCTION parley_index_build_progress(p_pid integer) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('phase', phase, 'blocks_done', blocks_done,
                              'blocks_total', blocks_total, 'tuples_done', tuples_done,
                              'tuples_total', tuples_total, 'lockers_done', lockers_done,
                              'lockers_total', lockers_total)
    FROM pg_stat_progress_create_index
    WHERE pid = p_pid
$$;

-- Records a build's failure for the operator (the log has each one).
CREATE OR REPLACE FUNCTION parley_index_build_failed(p_name text, p_error text) RETURNS void
    LANGUAGE sql AS $$
    UPDATE schema_index_builds SET last_error = left(p_error, 2000)
    WHERE name = p_name AND state = 'pending'
$$;
