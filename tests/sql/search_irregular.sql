-- search_irregular: irregular forms in parley_search (the table and its
-- lookup, src/db/sql/search_irregular.sql; parley_forms_query in
-- search.sql): every pair of issue #30 found both ways with the default
-- languages, as-written matches ranked first and the irregular forms
-- weighed as other forms, exclusions excluding them, phrases staying
-- exact, a word of no group unchanged, the homographs kept one way, and
-- the table holding only groups the stemmers do not relate.

-- The default list, in use (no rows yet: nothing to fill; the trigger
-- fills the rows inserted below).
SELECT pg_temp.expect('step: index', parley_search_forms_step('english,russian') ->> 'state',
                      'index');
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_forms_idx ON messages
    USING gin ((setweight(tsv, 'A') || forms));
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_pairs_idx ON messages
    USING gin (parley_word_pairs(tsv));
SELECT pg_temp.expect('step: ready', parley_search_forms_step('english,russian') ->> 'state',
                      'ready');

INSERT INTO chats (id, kind, title) VALUES (-100, 'supergroup', 'Ops'), (-200, 'group', 'Друзья');
INSERT INTO messages (chat_id, id, sender_id, date, text) VALUES
    (-100, 1, 7, '2026-01-01 10:00Z', 'a mouse in the kitchen'),
    (-100, 2, 7, '2026-01-02 10:00Z', 'two mice ran away'),
    (-100, 3, 7, '2026-01-03 10:00Z', 'one child was late'),
    (-100, 4, 7, '2026-01-04 10:00Z', 'the children were late'),
    (-100, 5, 7, '2026-01-05 10:00Z', 'we go home'),
    (-100, 6, 7, '2026-01-06 10:00Z', 'they went home'),
    (-100, 7, 7, '2026-01-07 10:00Z', 'a good monitor'),
    (-100, 8, 7, '2026-01-08 10:00Z', 'two better monitors'),
    (-100, 9, 7, '2026-01-09 10:00Z', 'this person called'),
    (-100, 10, 7, '2026-01-10 10:00Z', 'people called'),
    (-100, 11, 7, '2026-01-11 10:00Z', 'deploy the server'),
    (-100, 12, 7, '2026-01-12 10:00Z', 'the mouse trap'),
    (-100, 13, 7, '2026-01-02 10:00Z', 'two servers ran away'),
    (-100, 14, 7, '2026-01-02 10:00Z', 'two server ran away'),
    (-200, 1, 9, '2026-01-01 10:00Z', 'один человек пришёл'),
    (-200, 2, 9, '2026-01-02 10:00Z', 'люди пришли'),
    (-200, 3, 9, '2026-01-03 10:00Z', 'дети играют'),
    (-200, 4, 9, '2026-01-04 10:00Z', 'ребёнок играет'),
    (-200, 5, 9, '2026-01-05 10:00Z', 'он шёл домой'),
    (-200, 6, 9, '2026-01-06 10:00Z', 'надо идти домой'),
    (-200, 7, 9, '2026-01-07 10:00Z', 'так лучше'),
    (-200, 8, 9, '2026-01-08 10:00Z', 'хороший день');

-- The hits of q (default languages), sorted by key; in rank order for ranked.
CREATE FUNCTION pg_temp.s(q text, order_by text DEFAULT 'time') RETURNS jsonb LANGUAGE sql AS $$
    SELECT parley_search(q, NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, order_by, 50, 0)
$$;
CREATE FUNCTION pg_temp.hits(q text) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg((e ->> 'chat_id') || ':' || (e ->> 'id'), ','
                               ORDER BY (e ->> 'chat_id')::bigint DESC, (e ->> 'id')::bigint), '')
    FROM jsonb_array_elements(pg_temp.s(q) -> 'results') AS e
$$;
CREATE FUNCTION pg_temp.ranked(q text) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg((e ->> 'chat_id') || ':' || (e ->> 'id'), ',' ORDER BY o), '')
    FROM jsonb_array_elements(pg_temp.s(q, 'rank') -> 'results') WITH ORDINALITY AS x(e, o)
$$;
CREATE FUNCTION pg_temp.rank_of(q text, chat bigint, id bigint) RETURNS numeric LANGUAGE sql AS $$
    SELECT (e ->> 'rank')::numeric
    FROM jsonb_array_elements(pg_temp.s(q, 'rank') -> 'results') AS e
    WHERE (e ->> 'chat_id')::bigint = chat AND (e ->> 'id')::bigint = id
$$;

-- Every pair of the issue, both ways: each word finds the message with
-- the other.
SELECT pg_temp.expect('mouse → mice', pg_temp.hits('mouse'), '-100:1,-100:2,-100:12');
SELECT pg_temp.expect('mice → mouse', pg_temp.hits('mice'), '-100:1,-100:2,-100:12');
SELECT pg_temp.expect('child → children', pg_temp.hits('child'), '-100:3,-100:4');
SELECT pg_temp.expect('children → child', pg_temp.hits('children'), '-100:3,-100:4');
SELECT pg_temp.expect('go → went', pg_temp.hits('go'), '-100:5,-100:6');
SELECT pg_temp.expect('went → go', pg_temp.hits('went'), '-100:5,-100:6');
SELECT pg_temp.expect('good → better', pg_temp.hits('good'), '-100:7,-100:8');
SELECT pg_temp.expect('better → good', pg_temp.hits('better'), '-100:7,-100:8');
SELECT pg_temp.expect('good monitor → better monitors', pg_temp.hits('good monitor'),
                      '-100:7,-100:8');
SELECT pg_temp.expect('person → people', pg_temp.hits('person'), '-100:9,-100:10');
SELECT pg_temp.expect('people → person', pg_temp.hits('people'), '-100:9,-100:10');
SELECT pg_temp.expect('человек → люди', pg_temp.hits('человек'), '-200:1,-200:2');
SELECT pg_temp.expect('люди → человек', pg_temp.hits('люди'), '-200:1,-200:2');
SELECT pg_temp.expect('дети → ребёнок', pg_temp.hits('дети'), '-200:3,-200:4');
SELECT pg_temp.expect('ребёнок → дети', pg_temp.hits('ребёнок'), '-200:3,-200:4');
SELECT pg_temp.expect('ребенок (е) → дети', pg_temp.hits('ребенок'), '-200:3,-200:4');
SELECT pg_temp.expect('шёл → идти', pg_temp.hits('шёл'), '-200:5,-200:6');
SELECT pg_temp.expect('шел (е) → идти', pg_temp.hits('шел'), '-200:5,-200:6');
SELECT pg_temp.expect('идти → шёл', pg_temp.hits('идти'), '-200:5,-200:6');
SELECT pg_temp.expect('лучше → хороший', pg_temp.hits('лучше'), '-200:7,-200:8');
SELECT pg_temp.expect('хороший → лучше', pg_temp.hits('хороший'), '-200:7,-200:8');
SELECT pg_temp.expect('upper case', pg_temp.hits('MICE'), '-100:1,-100:2,-100:12');

-- By rank, the messages with the word as written come first; an
-- irregular form weighs as a regular form written as a word does (forms
-- keep no lexeme that is the message's word as written:
-- parley_forms_new): "mice" for mouse ranks as "server" for servers, in
-- two messages of one shape and date.
SELECT pg_temp.expect('as written first (mice)', pg_temp.ranked('mice'),
                      '-100:2,-100:12,-100:1');
SELECT pg_temp.expect('as written first (mouse)', pg_temp.ranked('mouse'),
                      '-100:12,-100:1,-100:2');
SELECT pg_temp.expect('as written first (люди)', pg_temp.ranked('люди'), '-200:2,-200:1');
SELECT pg_temp.expect('an irregular form is not exact', pg_temp.rank_of('mouse', -100, 2) < 1,
                      true);
SELECT pg_temp.expect('an irregular form weighs as a form written as a word',
    pg_temp.rank_of('mouse', -100, 2), pg_temp.rank_of('servers', -100, 14));
SELECT pg_temp.expect('the forms query',
    parley_forms_query(parley_search_exact_query('mouse'), 'english,russian')::text,
    '''mouse'' | ''mous'' | ''mice''');

-- Snippets mark the irregular form found.
SELECT pg_temp.expect('snippet marks mice', pg_temp.s('mouse') #>> '{results,1,snippet}',
                      'two **mice** ran away');
SELECT pg_temp.expect('snippet marks люди', pg_temp.s('человек') #>> '{results,0,snippet}',
                      '**люди** пришли');

-- Exclusions exclude the irregular forms too; phrases stay exact.
SELECT pg_temp.expect('exclusion of mice', pg_temp.hits('ran -mouse'), '-100:13,-100:14');
SELECT pg_temp.expect('exclusion of люди', pg_temp.hits('пришли -человек'), '');
SELECT pg_temp.expect('phrase as written', pg_temp.hits('"mice ran"'), '-100:2');
SELECT pg_temp.expect('phrase: no irregular form', pg_temp.hits('"mouse ran"'), '');
SELECT pg_temp.expect('phrase beside a word', pg_temp.hits('"the mouse" mice'), '-100:12');

-- A word of no group: its query and hits as before.
SELECT pg_temp.expect('no group', parley_irregular_group('deploy'), '{}'::text[]);
SELECT pg_temp.expect('query unchanged',
    parley_forms_query(parley_search_exact_query('deploy server'), 'english,russian')::text,
    '''deploy'' & ''server''');
SELECT pg_temp.expect('hits unchanged', pg_temp.hits('deploy'), '-100:11');

-- The lookup: lower case, ё read as е too, homographs one way.
SELECT pg_temp.expect('group of went', parley_irregular_group('Went'), '{go,goes,gone}'::text[]);
SELECT pg_temp.expect('better: good and best, not well', parley_irregular_group('better'),
                      '{good,best}'::text[]);
SELECT pg_temp.expect('well finds better', parley_irregular_group('well'),
                      '{better,best}'::text[]);
SELECT pg_temp.expect('see finds saw', 'saw' = ANY (parley_irregular_group('see')), true);
SELECT pg_temp.expect('saw finds its own forms only', parley_irregular_group('saw'), '{}'::text[]);
SELECT pg_temp.expect('life finds lives as written', parley_irregular_group('life'),
                      '{=lives}'::text[]);
SELECT pg_temp.expect('lives (the verb) finds its own forms only', parley_irregular_group('lives'),
                      '{}'::text[]);
SELECT pg_temp.expect('life: not every live',
    parley_forms_query(parley_search_exact_query('life'), 'english,russian')::text,
    '''life'' | ''lives''');
SELECT pg_temp.expect('stop words as written',
    parley_forms_query(parley_search_exact_query('was'), 'english,russian')::text,
    '''was'' | ''be'' | ''am'' | ''is'' | ''are'' | ''were'' | ''been'' | ''being''');
SELECT pg_temp.expect('ё and е', parley_irregular_group('шел') @> '{идти,шёл}', true);

-- The table relates only what the stemmers do not: every word of a group
-- finds a word of another stem (english for Latin words, russian for
-- Cyrillic; a stop word, which the stemmer drops, relates to nothing).
SELECT pg_temp.expect('each group has two stems at least', (
    SELECT count(*) FROM jsonb_each_text(parley_irregular_map()) AS k(word, targets)
    WHERE NOT EXISTS (
        SELECT 1 FROM unnest(targets::text[]) AS t
        WHERE to_tsvector(CASE WHEN k.word ~ '[а-яё]' THEN 'russian' ELSE 'english' END::regconfig,
                          k.word)::text
              IS DISTINCT FROM
              to_tsvector(CASE WHEN k.word ~ '[а-яё]' THEN 'russian' ELSE 'english' END::regconfig,
                          ltrim(t, '='))::text
              OR to_tsvector(CASE WHEN k.word ~ '[а-яё]' THEN 'russian' ELSE 'english' END::regconfig,
                             k.word)::text = '')), 0::bigint);
SELECT pg_temp.expect('words', (SELECT count(*) > 800 FROM jsonb_object_keys(parley_irregular_map())),
                      true);
