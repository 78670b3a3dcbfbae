-- presence: whether a daemon on this database is alive (migration 027).
-- A daemon holds the advisory lock hashtextextended('parley_daemon:' ||
-- owner, 0) on a dedicated connection while it runs; pg_locks shows a
-- bigint advisory lock with objsubid 1, its key split into classid (high
-- 32 bits) and objid (low 32 bits).

CREATE OR REPLACE FUNCTION parley_daemon_alive(p_owner text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND objsubid = 1
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND ((classid::bigint << 32) | objid::bigint)
              = hashtextextended('parley_daemon:' || p_owner, 0))
$$;
