-- search_forms: word forms in parley_search (src/db/sql/search_forms.sql,
-- migration 022): the steps the daemon's builder takes (fill, index,
-- switch), then English and Russian forms, exact phrases, exclusions of
-- every form, OR across forms, exact tokens, ranking exact forms first,
-- CJK and fuzzy as before, the trigger for rows written later, and
-- switching the forms off and on again.

INSERT INTO chats (id, kind, title) VALUES (-100, 'supergroup', 'Ops'), (-200, 'group', 'Друзья');
INSERT INTO messages (chat_id, id, sender_id, date, text) VALUES
    (-100, 1, 7, '2026-01-01 10:00Z', 'we deployed the servers'),
    (-100, 2, 7, '2026-01-02 10:00Z', 'the servers deployed themselves'),
    (-100, 3, 8, '2026-01-03 10:00Z', 'deploy the server again'),
    (-100, 4, 8, '2026-01-04 10:00Z', 'an employee joined'),
    (-100, 5, 8, '2026-01-05 10:00Z', 'error ERR_CONN_42 from host k8s-node-3 (Ivanov)'),
    (-100, 6, 8, '2026-01-06 10:00Z', 'running tests while it runs, see https://status.example.net/i/88'),
    (-200, 1, 9, '2026-01-07 10:00Z', 'встреча в Москве завтра'),
    (-200, 2, 9, '2026-01-08 10:00Z', 'Москва слезам не верит'),
    (-200, 3, 9, '2026-01-09 10:00Z', 'встречи с друзьями'),
    (-200, 4, 9, '2026-01-10 10:00Z', '今天的部署很顺利');

CREATE FUNCTION pg_temp.ids(r jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg((e ->> 'chat_id') || ':' || (e ->> 'id'), ',' ORDER BY o), '')
    FROM jsonb_array_elements(r -> 'results') WITH ORDINALITY AS x(e, o)
$$;
CREATE FUNCTION pg_temp.s(q text, order_by text DEFAULT 'time', fuzzy boolean DEFAULT false)
    RETURNS jsonb LANGUAGE sql AS $$
    SELECT parley_search(q, NULL, fuzzy, NULL, NULL, NULL, NULL, NULL, NULL, order_by, 50, 0)
$$;

-- Before any list is asked for: words as written.
SELECT pg_temp.expect('no list yet', parley_search_languages(), '');
SELECT pg_temp.expect('exact only before', pg_temp.ids(pg_temp.s('deploy server')), '-100:3');

-- The builder's steps: rows stored before the list are filled in batches.
SELECT pg_temp.expect_error('unknown configuration',
    $$SELECT parley_search_forms_step('english, klingon')$$, '22023',
    '"klingon" is not a text search configuration.*english');
SELECT pg_temp.expect('step: fill', parley_search_forms_step(' english, Russian,english') ->> 'state',
                      'fill');
SELECT pg_temp.expect('the list resolved', (SELECT languages FROM search_forms WHERE target),
                      'english,russian');
SELECT pg_temp.expect('still exact while filling', parley_search_languages(), '');
SELECT pg_temp.expect('a batch', parley_search_forms_fill('english,russian', 4) ->> 'rows', '4');
SELECT pg_temp.expect('step: still fill', parley_search_forms_step('english,russian') ->> 'state',
                      'fill');
SELECT pg_temp.expect('the rest', parley_search_forms_fill('english,russian', 100) ->> 'rows', '6');
SELECT pg_temp.expect('finished', parley_search_forms_fill('english,russian', 100) ->> 'finished',
                      'true');
SELECT pg_temp.expect('every row filled', (SELECT count(*) FROM messages WHERE forms IS NULL), 0::bigint);
SELECT pg_temp.expect('step: index', parley_search_forms_step('english,russian') ->> 'state',
                      'index');
SELECT pg_temp.expect('the index statement',
    parley_search_forms_step('english,russian') ->> 'create',
    'CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_forms_idx ON messages USING gin '
    '((setweight(tsv, ''A'') || forms))');
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_forms_idx ON messages
    USING gin ((setweight(tsv, 'A') || forms));
-- The search uses it (the planner sees the same expression).
SET enable_seqscan = off;
SELECT pg_temp.expect('the index serves the search',
    (SELECT count(*) FROM messages m
     WHERE (setweight(m.tsv, 'A') || m.forms) @@ parley_forms_query(to_tsquery('simple', 'deployed'),
                                                                    'english,russian')), 3::bigint);
SELECT pg_temp.expect('the plan reads messages_forms_idx',
    pg_temp.plan($$SELECT 1 FROM messages m WHERE (setweight(m.tsv, 'A') || m.forms) @@ 'x'::tsquery$$)
        LIKE '%messages_forms_idx%', true);
RESET enable_seqscan;
-- The list is in use at once; then the phrases' index of word pairs
-- (migration 030) is asked for.
SELECT pg_temp.expect('step: the pairs', parley_search_forms_step('english,russian') ->> 'index',
                      'phrase word pairs');
SELECT pg_temp.expect('in use before the pairs', parley_search_languages(), 'english,russian');
SELECT pg_temp.expect('the pairs'' statement',
    parley_search_forms_step('english,russian') ->> 'create',
    'CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_pairs_idx ON messages USING gin (parley_word_pairs(tsv))');
SELECT pg_temp.expect('pairs not ready', parley_search_pairs_ready(), false);
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_pairs_idx ON messages
    USING gin (parley_word_pairs(tsv));
SELECT pg_temp.expect('pairs ready', parley_search_pairs_ready(), true);
SELECT pg_temp.expect('step: ready', parley_search_forms_step('english,russian') ->> 'state',
                      'ready');
SELECT pg_temp.expect('in use', parley_search_languages(), 'english,russian');
SELECT pg_temp.expect_error('fill of a list not asked for',
    $$SELECT parley_search_forms_fill('english', 10)$$, '55000', 'no longer the one asked for');

-- English forms: plurals and tenses, as issue #18 asks.
SELECT pg_temp.expect('deploy server', pg_temp.ids(pg_temp.s('deploy server')),
                      '-100:3,-100:2,-100:1');
SELECT pg_temp.expect('not a different word', pg_temp.ids(pg_temp.s('employ')), '');
SELECT pg_temp.expect('run / running / runs', pg_temp.ids(pg_temp.s('run')), '-100:6');
-- Russian cases.
SELECT pg_temp.expect('москва', pg_temp.ids(pg_temp.s('москва')), '-200:2,-200:1');
SELECT pg_temp.expect('встреча', pg_temp.ids(pg_temp.s('встреча')), '-200:3,-200:1');
SELECT pg_temp.expect('mixed scripts', pg_temp.ids(pg_temp.s('встречи Москва')), '-200:1');
-- Quoted phrases stay exact: not reordered, not other forms.
SELECT pg_temp.expect('exact phrase', pg_temp.ids(pg_temp.s('"deployed the servers"')), '-100:1');
SELECT pg_temp.expect('phrase of other forms', pg_temp.ids(pg_temp.s('"deploy the servers"')), '');
SELECT pg_temp.expect('phrase beside forms', pg_temp.ids(pg_temp.s('"the servers" deploying')),
                      '-100:2,-100:1');
SELECT pg_temp.expect('phrase OR a form', pg_temp.ids(pg_temp.s('"deployed the" OR employees')),
                      '-100:4,-100:1');
-- Exclusions exclude every form; OR works across forms.
SELECT pg_temp.expect('exclusion of every form', pg_temp.ids(pg_temp.s('deploy -servers')), '');
SELECT pg_temp.expect('exclusion', pg_temp.ids(pg_temp.s('deployed -again')), '-100:2,-100:1');
SELECT pg_temp.expect('excluded phrase', pg_temp.ids(pg_temp.s('server -"deployed the"')),
                      '-100:3,-100:2');
SELECT pg_temp.expect('OR across forms', pg_temp.ids(pg_temp.s('employees OR москвы')),
                      '-200:2,-200:1,-100:4');
-- Exact tokens: codes, names, hyphenated hosts.
SELECT pg_temp.expect('code', pg_temp.ids(pg_temp.s('ERR_CONN_42')), '-100:5');
SELECT pg_temp.expect('host', pg_temp.ids(pg_temp.s('k8s-node-3')), '-100:5');
SELECT pg_temp.expect('name', pg_temp.ids(pg_temp.s('ivanov')), '-100:5');
SELECT pg_temp.expect('URL', pg_temp.ids(pg_temp.s('https://status.example.net/i/88')), '-100:6');
SELECT pg_temp.expect('URL beside a word', pg_temp.ids(pg_temp.s('tests https://status.example.net/i/88')),
                      '-100:6');
-- By rank: every word as written first, then other forms.
SELECT pg_temp.expect('exact forms first', pg_temp.ids(pg_temp.s('servers', 'rank')),
                      '-100:2,-100:1,-100:3');
SELECT pg_temp.expect('rank blend of an exact match',
    (pg_temp.s('servers', 'rank') #>> '{results,0,rank}')::numeric >= 1, true);
SELECT pg_temp.expect('rank blend of other forms',
    (pg_temp.s('servers', 'rank') #>> '{results,2,rank}')::numeric < 1, true);
-- Snippets mark the forms found.
SELECT pg_temp.expect('snippet marks forms',
    pg_temp.s('deploy') #>> '{results,2,snippet}', 'we **deployed** the servers');
SELECT pg_temp.expect('snippet marks russian forms',
    pg_temp.s('москва') #>> '{results,1,snippet}', 'встреча в **Москве** завтра');
-- CJK substrings and fuzzy as before.
SELECT pg_temp.expect('cjk', pg_temp.ids(pg_temp.s('部署')), '-200:4');
SELECT pg_temp.expect('fuzzy', pg_temp.ids(pg_temp.s('deployd', fuzzy => true)), '-100:3,-100:2,-100:1');

-- Rows written later get their forms from the trigger; so does new text.
INSERT INTO messages (chat_id, id, sender_id, date, text)
VALUES (-100, 7, 7, '2026-02-01 10:00Z', 'deploying databases');
SELECT pg_temp.expect('new row', pg_temp.ids(pg_temp.s('database deployment')), '-100:7');
UPDATE messages SET text = 'employees met in Moscow' WHERE chat_id = -100 AND id = 7;
SELECT pg_temp.expect('changed text', pg_temp.ids(pg_temp.s('employee moscow')), '-100:7');

-- Off: words as written; the column is left as it is.
SELECT pg_temp.expect('off', parley_search_forms_step('') ->> 'state', 'ready');
SELECT pg_temp.expect('off in use', parley_search_languages(), '');
SELECT pg_temp.expect('exact only again', pg_temp.ids(pg_temp.s('deploy server')), '-100:3');
-- On again: refilled from the start (rows written while off have none).
SELECT pg_temp.expect('on: fill', parley_search_forms_step('english,russian') ->> 'state', 'fill');
SELECT pg_temp.expect('on: rows', parley_search_forms_fill('english,russian', 100) ->> 'rows', '11');
SELECT pg_temp.expect('on: finished',
    parley_search_forms_fill('english,russian', 100) ->> 'finished', 'true');
SELECT pg_temp.expect('on: ready (the index is there)',
    parley_search_forms_step('english,russian') ->> 'state', 'ready');
SELECT pg_temp.expect('on again', pg_temp.ids(pg_temp.s('deploy server')), '-100:3,-100:2,-100:1');

-- One oversized message never fails a write (migration 025): about 1.8 MB
-- of distinct words, over tsvector's 1 MB, is stored whole; its exact words
-- and forms come from a prefix that fits beside each other (the forms
-- index computes their concatenation for every row). Every other text has
-- exactly the vector it had (to_tsvector('simple', text)).
INSERT INTO messages (chat_id, id, sender_id, date, text)
SELECT -100, 100, 8, '2026-02-01 10:00Z',
       'needle ' || string_agg('w' || to_hex(i) || 'x' || to_hex(i * 7919) || 'zz', ' ')
FROM generate_series(1, 120000) AS i;
SELECT pg_temp.expect('stored whole',
    (SELECT octet_length(text) > 1800000 FROM messages WHERE chat_id = -100 AND id = 100), true);
SELECT pg_temp.expect('its first words found', pg_temp.ids(pg_temp.s('needle')), '-100:100');
SELECT pg_temp.expect('the vectors fit together',
    (SELECT length(setweight(tsv, 'A') || forms) > 20000 FROM messages WHERE chat_id = -100 AND id = 100), true);
UPDATE messages SET text = text || ' more' WHERE chat_id = -100 AND id = 100;
SELECT pg_temp.expect('every other row: the vector as before',
    (SELECT count(*) FROM messages WHERE id <> 100 AND tsv IS DISTINCT FROM to_tsvector('simple', coalesce(text, ''))),
    0::bigint);
SELECT pg_temp.expect('a text that fits: the same vector',
    parley_text_tsv(repeat('alpha beta ', 10000)) = to_tsvector('simple', repeat('alpha beta ', 10000)), true);

-- The trigger is written with the target list in it
-- (parley_messages_forms_define): every row written gets exactly the
-- vectors parley_text_tsv and parley_forms_vector give for that list —
-- short, 40 kB (past the inline branch), NULL and empty texts — a text of
-- ASCII characters only those of the configurations that read it
-- differently (parley_forms_ascii_list), and it follows the target when
-- the builder's step changes it; applying it again for the same list
-- replaces nothing.
SELECT pg_temp.expect('ascii list: russian reads ASCII as english does',
    parley_forms_ascii_list('english,russian'), 'english');
SELECT pg_temp.expect('ascii list: the first kept', parley_forms_ascii_list('russian,english'), 'russian');
SELECT pg_temp.expect('ascii list: one', parley_forms_ascii_list('english'), 'english');
SELECT pg_temp.expect('ascii list: different stemmers kept',
    parley_forms_ascii_list('german,english,simple'), 'german,english,simple');
SELECT pg_temp.expect('ascii list: the same lexemes',
    (SELECT count(*) FROM messages WHERE text IS NOT NULL AND octet_length(text) = length(text)
       AND tsvector_to_array(parley_forms_vector(text, 'english'))
           <> tsvector_to_array(parley_forms_vector(text, 'english,russian'))), 0::bigint);
INSERT INTO messages (chat_id, id, sender_id, date, text) VALUES
    (-100, 200, 8, '2026-03-01 10:00Z', 'The runners were running; бегуны бежали'),
    (-100, 201, 8, '2026-03-01 10:01Z', repeat('deployments встречи ', 2000)),
    (-100, 202, 8, '2026-03-01 10:02Z', NULL),
    (-100, 203, 8, '2026-03-01 10:03Z', ''),
    (-100, 204, 8, '2026-03-01 10:04Z', 'The runners were running'),
    (-100, 205, 8, '2026-03-01 10:05Z', repeat('deployments meetings ', 2000));
SELECT pg_temp.expect('trigger: the function holds its list',
    (SELECT prosrc LIKE '%to_tsvector(''english''::regconfig, NEW.text) || to_tsvector(''russian''::regconfig, NEW.text)%'
     FROM pg_proc WHERE oid = 'parley_messages_forms()'::regprocedure), true);
SELECT pg_temp.expect('trigger: synced again, nothing replaced', parley_messages_forms_sync(), false);
SELECT pg_temp.expect('trigger: the vectors of the list',
    (SELECT count(*) FROM messages WHERE id BETWEEN 200 AND 203
       AND tsv = parley_text_tsv(text)
       AND forms IS NOT DISTINCT FROM parley_forms_new(parley_forms_vector(text, 'english,russian'), tsv)),
    4::bigint);
SELECT pg_temp.expect('trigger: ASCII text parsed once',
    (SELECT count(*) FROM messages WHERE id IN (204, 205)
       AND tsv = parley_text_tsv(text)
       AND forms = parley_forms_new(parley_forms_vector(text, 'english'), tsv)), 2::bigint);
SELECT pg_temp.expect('trigger: a long text is read whole',
    (SELECT forms @@ 'встреч'::tsquery AND forms @@ 'deploy'::tsquery FROM messages WHERE id = 201), true);
-- Forms keep no lexeme that is the row's word as written ("running" is
-- its own english reading in none, "бежали" its own in english: tsv has
-- it), and such a word still finds the row through its forms.
SELECT pg_temp.expect('trigger: forms without the words as written',
    (SELECT count(*) FROM messages WHERE forms IS NOT NULL
       AND tsvector_to_array(forms) && tsvector_to_array(tsv)), 0::bigint);
SELECT pg_temp.expect('trigger: english reads Cyrillic into itself, kept once',
    (SELECT NOT forms @@ 'бежали'::tsquery AND tsv @@ 'бежали'::tsquery
     FROM messages WHERE chat_id = -100 AND id = 200), true);
SELECT pg_temp.expect('trigger: same list, nothing replaced',
    parley_messages_forms_define('english,russian'), false);
SELECT pg_temp.expect('trigger: a new target', parley_search_forms_step('russian') ->> 'state', 'fill');
UPDATE messages SET text = 'The runners were running; бегуны бежали снова' WHERE chat_id = -100 AND id = 200;
SELECT pg_temp.expect('trigger: rows written now get the new list',
    (SELECT forms = parley_forms_new(parley_forms_vector(text, 'russian'), tsv)
            AND forms <> parley_forms_new(parley_forms_vector(text, 'english,russian'), tsv)
     FROM messages WHERE chat_id = -100 AND id = 200), true);
-- The backfill reads ASCII text as the trigger does.
SELECT pg_temp.expect('backfill: refilled', parley_search_forms_fill('russian', 1000) ->> 'finished', 'false');
SELECT pg_temp.expect('backfill: the trigger''s vectors',
    (SELECT count(*) FROM messages WHERE text IS NOT NULL
       AND forms IS DISTINCT FROM parley_forms_new(parley_forms_vector(text, 'russian'), tsv)), 0::bigint);
SELECT pg_temp.expect('trigger: words as written only', parley_search_forms_step('') ->> 'state', 'ready');
UPDATE messages SET text = 'running once more' WHERE chat_id = -100 AND id = 200;
SELECT pg_temp.expect('trigger: no forms without a list',
    (SELECT forms IS NULL AND tsv = to_tsvector('simple', text) FROM messages WHERE chat_id = -100 AND id = 200), true);
