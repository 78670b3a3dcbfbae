-- 034_index_builds: indexes that migrations ask for, built in the
-- background. A migration runs inside the one transaction of every start
-- (src/db/migrate.c), where CREATE INDEX blocks the table's writes for as
-- long as it takes (minutes on a messages table of millions of rows) and
-- CREATE INDEX CONCURRENTLY cannot run at all. A migration that adds an
-- index to a large table declares it instead:
--
--     SELECT parley_index_build('messages_x_idx',
--         'CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_x_idx ON messages (x)');
--     SELECT parley_index_build('messages_y2_idx',
--         'CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_y2_idx ON messages (y, x)',
--         'messages_y_idx');   -- dropped CONCURRENTLY once messages_y2_idx is valid
--
-- and after the migrations the daemon's builder (src/db/index_build.c;
-- serve, and parleyd migrate before it exits) runs each statement on a
-- connection of its own, outside any transaction, while the daemon
-- serves: one daemon of several at a time (a session advisory lock),
-- resumably (an invalid index a stopped build left is dropped and built
-- again), with its progress in the log (docs/architecture.md, "Indexes
-- built in the background"). Queries must answer correctly without the
-- index (only slower), and no later migration may rely on it existing.

-- One row an index asked for, built in the order asked (seq).
CREATE TABLE schema_index_builds (
    -- The index's name, a plain lower-case identifier; an index is built
    -- once under its name (a changed index is a new name that replaces the
    -- old one).
    name         text PRIMARY KEY,
    -- The table it indexes, as the definition names it.
    table_name   text NOT NULL,
    -- The whole statement: CREATE [UNIQUE] INDEX CONCURRENTLY IF NOT
    -- EXISTS name ON table_name ..., constant text of the migration.
    definition   text NOT NULL,
    -- An index of the same table to DROP INDEX CONCURRENTLY once this one
    -- is valid, or NULL.
    replaces     text,
    -- The migration that asked (NULL: asked outside a migration).
    version      integer,
    seq          bigint GENERATED ALWAYS AS IDENTITY,
    requested_at timestamptz NOT NULL DEFAULT now(),
    -- pending until the index is valid (and the one it replaces dropped).
    state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done')),
    -- Builds started (a failed or stopped one is started again).
    attempts     integer NOT NULL DEFAULT 0,
    started_at   timestamptz,
    finished_at  timestamptz,
    -- The last failure, for the operator (the log has each one).
    last_error   text,
    CHECK ((state = 'done') = (finished_at IS NOT NULL))
);

-- Declares a background build of index p_name (see above); p_replaces: an
-- index to drop once it is valid. Called by migrations, so it lives here
-- with its table, not in a repeatable file (those are applied after the
-- migrations). Declaring the same index again with the same definition
-- changes nothing; another definition under a taken name is an error. On a
-- table with no rows yet (a new store, where every migration meets empty
-- tables) the index is made at once, in the migration's transaction (no
-- cost, no lock anyone waits on), and the build is done: built in the
-- background it would only race the daemon's other builders (the word
-- forms') for a table nobody waits for.
CREATE FUNCTION parley_index_build(p_name text, p_definition text, p_replaces text DEFAULT NULL)
    RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    m text[] := regexp_match(p_definition,
        '^\s*CREATE\s+(UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+(\S+)\s+ON\s+(ONLY\s+)?([a-z_][a-z0-9_]*)[\s(]',
        'i');
    old schema_index_builds;
    empty boolean;
BEGIN
    IF p_name !~ '^[a-z_][a-z0-9_]{0,62}$' OR p_replaces !~ '^[a-z_][a-z0-9_]{0,62}$' THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('parley_index_build(%L, ..., %L): index names are plain lower-case '
                             'identifiers', p_name, p_replaces);
    END IF;
    IF m IS NULL OR m[2] <> p_name OR length(p_definition) >= 4096 THEN
        RAISE EXCEPTION USING ERRCODE = '22023',
            MESSAGE = format('parley_index_build(%L, ...): the definition must read CREATE '
                             '[UNIQUE] INDEX CONCURRENTLY IF NOT EXISTS %s ON table ... '
                             '(under 4,096 bytes)', p_name, p_name);
    END IF;
    IF to_regclass(m[4]) IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '42P01',
            MESSAGE = format('parley_index_build(%L, ...): no table %s', p_name, m[4]);
    END IF;
    SELECT * INTO old FROM schema_index_builds WHERE name = p_name;
    IF FOUND THEN
        IF old.definition = p_definition AND old.replaces IS NOT DISTINCT FROM p_replaces THEN
            RETURN;
        END IF;
        RAISE EXCEPTION USING ERRCODE = '23505',
            MESSAGE = format('parley_index_build(%L, ...): migration %s declared that index '
                             'with another definition; give the new one a new name that '
                             'replaces it', p_name, coalesce(old.version::text, '(none)'));
    END IF;
    INSERT INTO schema_index_builds (name, table_name, definition, replaces, version)
    VALUES (p_name, lower(m[4]), p_definition, p_replaces,
            nullif(current_setting('parley.migration', true), '')::integer);
    EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %I)', lower(m[4])) INTO empty;
    IF empty THEN
        EXECUTE regexp_replace(p_definition, '\mCONCURRENTLY\M\s*', '', 'i');
        IF p_replaces IS NOT NULL THEN
            EXECUTE format('DROP INDEX IF EXISTS %I', p_replaces);
        END IF;
        UPDATE schema_index_builds SET state = 'done', finished_at = now() WHERE name = p_name;
    END IF;
END
$$;
