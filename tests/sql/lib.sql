-- lib: assertion helpers for the SQL tests (tests/harness/sql_test.sh runs
-- this file first, in the same session). They live in pg_temp and go away
-- with the session.

-- Fails with both values unless got equals want.
CREATE FUNCTION pg_temp.expect(what text, got anyelement, want anyelement) RETURNS void
    LANGUAGE plpgsql AS $$
BEGIN
    IF got IS DISTINCT FROM want THEN
        RAISE EXCEPTION 'FAILED %: got %, want %', what, got, want;
    END IF;
END
$$;

-- Fails unless sql raises SQLSTATE state with a message matching pattern
-- (a POSIX regex).
CREATE FUNCTION pg_temp.expect_error(what text, sql text, state text, pattern text)
    RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE sql;
    RAISE EXCEPTION 'FAILED %: no error', what;
EXCEPTION WHEN OTHERS THEN
    IF SQLERRM LIKE 'FAILED %' THEN
        RAISE;
    END IF;
    IF SQLSTATE <> state OR SQLERRM !~ pattern THEN
        RAISE EXCEPTION 'FAILED %: got % "%", want % matching "%"', what, SQLSTATE, SQLERRM,
            state, pattern;
    END IF;
END
$$;

-- The plan of q (EXPLAIN's lines), for tests that check an index serves.
CREATE FUNCTION pg_temp.plan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r text;
    o text := '';
BEGIN
    FOR r IN EXECUTE 'EXPLAIN ' || q LOOP
        o := o || r || E'\n';
    END LOOP;
    RETURN o;
END
$$;
