-- index_builds: what a migration declares with parley_index_build
-- (migration 034) and what the builder's step answers
-- (src/db/sql/index_builds.sql). The builds themselves run in
-- tests/unit/test_index_build.c (CREATE INDEX CONCURRENTLY cannot run
-- here, in a transaction).

-- The schema's own builds, which parleyd migrate ran before this test:
-- migration 035's partial index of topics, in place of 001's.
SELECT pg_temp.expect('the schema''s builds', (SELECT string_agg(concat_ws(':', name, version, replaces, state),
                                                                ' ' ORDER BY seq)
                                               FROM schema_index_builds),
                      'messages_topic_idx:35:messages_chat_topic_idx:done');
SELECT pg_temp.expect('topics: partial', pg_get_indexdef('messages_topic_idx'::regclass),
    'CREATE INDEX messages_topic_idx ON public.messages USING btree (chat_id, topic_id, id) WHERE (topic_id IS NOT NULL)');
SELECT pg_temp.expect('topics: the full index dropped', to_regclass('messages_chat_topic_idx'), NULL::regclass);
DELETE FROM schema_index_builds;

CREATE TABLE ib_t (a integer, b integer);
INSERT INTO ib_t SELECT i, i % 3 FROM generate_series(1, 100) i;

-- A declaration outside a migration records no version; inside one, the
-- runner's parley.migration.
SELECT parley_index_build('ib_t_a_idx', 'CREATE INDEX CONCURRENTLY IF NOT EXISTS ib_t_a_idx ON ib_t (a)');
SELECT set_config('parley.migration', '901', true),
       parley_index_build('ib_t_b_idx',
           'create unique index concurrently if not exists ib_t_b_idx on ib_t(b, a)', 'ib_t_a_idx');
SELECT pg_temp.expect('rows', (SELECT string_agg(concat_ws(':', name, table_name, version, replaces, state), ' '
                                                 ORDER BY seq) FROM schema_index_builds),
                      'ib_t_a_idx:ib_t:pending ib_t_b_idx:ib_t:901:ib_t_a_idx:pending');
-- The same declaration again changes nothing.
SELECT parley_index_build('ib_t_a_idx', 'CREATE INDEX CONCURRENTLY IF NOT EXISTS ib_t_a_idx ON ib_t (a)');
SELECT pg_temp.expect('declared twice', (SELECT count(*) FROM schema_index_builds), 2::bigint);

-- What a declaration refuses, each with what to change.
SELECT pg_temp.expect_error('another definition',
    $$SELECT parley_index_build('ib_t_a_idx', 'CREATE INDEX CONCURRENTLY IF NOT EXISTS ib_t_a_idx ON ib_t (b)')$$,
    '23505', 'another definition; give the new one a new name');
SELECT pg_temp.expect_error('not concurrent',
    $$SELECT parley_index_build('ib_x_idx', 'CREATE INDEX ib_x_idx ON ib_t (b)')$$,
    '22023', 'must read CREATE \[UNIQUE\] INDEX CONCURRENTLY IF NOT EXISTS ib_x_idx ON');
SELECT pg_temp.expect_error('another name in the statement',
    $$SELECT parley_index_build('ib_x_idx', 'CREATE INDEX CONCURRENTLY IF NOT EXISTS ib_y_idx ON ib_t (b)')$$,
    '22023', 'must read');
SELECT pg_temp.expect_error('no table',
    $$SELECT parley_index_build('ib_x_idx', 'CREATE INDEX CONCURRENTLY IF NOT EXISTS ib_x_idx ON nope (b)')$$,
    '42P01', 'no table nope');
SELECT pg_temp.expect_error('a quoted name',
    $$SELECT parley_index_build('Ib X', 'CREATE INDEX CONCURRENTLY IF NOT EXISTS "Ib X" ON ib_t (b)')$$,
    '22023', 'plain lower-case identifiers');

-- The step: the first build in order, this session taking the lock.
SELECT pg_temp.expect('create', parley_index_build_step() - 'pid',
    '{"state": "create", "name": "ib_t_a_idx", "table": "ib_t", "version": null, "attempt": 1,
      "sql": "CREATE INDEX CONCURRENTLY IF NOT EXISTS ib_t_a_idx ON ib_t (a)"}'::jsonb);
SELECT pg_temp.expect('lock held', parley_index_build_lock_held(), true);
-- Built (plainly here), it is marked done and the next one comes.
CREATE INDEX ib_t_a_idx ON ib_t (a);
SELECT pg_temp.expect('next', parley_index_build_step() ->> 'name', 'ib_t_b_idx');
SELECT pg_temp.expect('done', (SELECT state FROM schema_index_builds WHERE name = 'ib_t_a_idx'), 'done');
-- An invalid index by that name is dropped first (a failed build's
-- leftover; marked invalid by hand here).
CREATE UNIQUE INDEX ib_t_b_idx ON ib_t (b, a);
UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'ib_t_b_idx'::regclass;
SELECT pg_temp.expect('drop invalid', parley_index_build_step(),
    '{"state": "drop", "what": "invalid", "name": "ib_t_b_idx", "table": "ib_t",
      "sql": "DROP INDEX CONCURRENTLY IF EXISTS ib_t_b_idx"}'::jsonb);
UPDATE pg_index SET indisvalid = true WHERE indexrelid = 'ib_t_b_idx'::regclass;
-- Valid: the index it replaces is dropped, then it is done.
SELECT pg_temp.expect('drop replaced', parley_index_build_step(),
    '{"state": "drop", "what": "replaced", "name": "ib_t_a_idx", "for": "ib_t_b_idx", "table": "ib_t",
      "sql": "DROP INDEX CONCURRENTLY IF EXISTS ib_t_a_idx"}'::jsonb);
DROP INDEX ib_t_a_idx;
SELECT pg_temp.expect('idle', parley_index_build_step(), '{"state": "idle"}'::jsonb);
SELECT pg_temp.expect('all done', (SELECT string_agg(state || ':' || (finished_at IS NOT NULL), ' ')
                                   FROM schema_index_builds), 'done:true done:true');

-- A relation of the index's name that is not its index stops the step
-- with what to do.
CREATE TABLE ib_z_idx (a integer);
SELECT parley_index_build('ib_z_idx', 'CREATE INDEX CONCURRENTLY IF NOT EXISTS ib_z_idx ON ib_t (b)');
SELECT pg_temp.expect_error('taken name', 'SELECT parley_index_build_step()', '55000',
    'a relation named ib_z_idx exists that is not an index of ib_t: rename or drop it');
DROP TABLE ib_z_idx;
-- A build whose table went away is marked done, not built.
DROP TABLE ib_t;
SELECT pg_temp.expect('gone', parley_index_build_step() ->> 'state', 'gone');
SELECT pg_temp.expect('idle at last', parley_index_build_step() ->> 'state', 'idle');
