-- search_near: near spellings (src/db/sql/search_near.sql). The one-edit
-- variants; the words a query may have misspelt (found nowhere, in no
-- form); one-letter insertions, deletions, substitutions and
-- transpositions read as the archive's word, the best for the whole query
-- chosen (meeting, not setting, beside agenda); the answer marked and the
-- reading said; a surface's near words come from its own messages; no
-- reading when the words are known, short, excluded or have no near word;
-- the other search tools (memory, bluesky, chatwise, recall); the note
-- while the word forms are being brought in.

INSERT INTO chats (id, kind, title) VALUES (-100, 'supergroup', 'Ops'), (-200, 'group', 'Друзья'),
    (-300, 'feed', 'feed');
INSERT INTO messages (chat_id, id, sender_id, date, text) VALUES
    (-100, 1, 7, '2026-01-01 10:00Z', 'The meeting agenda is attached'),
    (-100, 2, 7, '2026-01-02 10:00Z', 'Setting up the printer again'),
    (-100, 3, 8, '2026-01-03 10:00Z', 'Release notes for version 2 are out'),
    (-100, 4, 8, '2026-01-04 10:00Z', 'the invoices were reconciled'),
    (-100, 5, 8, '2026-01-05 10:00Z', 'melting glaciers and the setting sun'),
    (-200, 1, 9, '2026-01-07 10:00Z', 'встреча в Москве завтра'),
    (-300, 1, 9, '2026-01-08 10:00Z', 'kubernetes upgrade tonight');
SELECT parley_search_words_merge(1000);

CREATE FUNCTION pg_temp.ids(r jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg((e ->> 'chat_id') || ':' || (e ->> 'id'), ',' ORDER BY o), '')
    FROM jsonb_array_elements(r -> 'results') WITH ORDINALITY AS x(e, o)
$$;
CREATE FUNCTION pg_temp.s(q text, src text DEFAULT NULL) RETURNS jsonb LANGUAGE sql AS $$
    SELECT parley_search(q, NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, 'rank', 50, 0, src)
$$;
CREATE FUNCTION pg_temp.read_as(r jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg((x ->> 'from') || '>' || (x ->> 'to'), ',' ORDER BY o), '')
    FROM jsonb_array_elements(r -> 'corrections') WITH ORDINALITY AS y(x, o)
$$;

-- The variants: each kind of edit, once each, never the word itself.
SELECT pg_temp.expect('deletion', 'meting' = ANY (parley_edits1('meeting')), true);
SELECT pg_temp.expect('insertion', 'meeeting' = ANY (parley_edits1('meeting')), true);
SELECT pg_temp.expect('substitution', 'meating' = ANY (parley_edits1('meeting')), true);
SELECT pg_temp.expect('transposition', 'emeting' = ANY (parley_edits1('meeting')), true);
SELECT pg_temp.expect('not itself', 'meeting' = ANY (parley_edits1('meeting')), false);
SELECT pg_temp.expect('two edits away', 'meting' = ANY (parley_edits1('metting')), true);
SELECT pg_temp.expect('Cyrillic letters for Cyrillic words', 'москве' = ANY (parley_edits1('моске')),
                      true);
SELECT pg_temp.expect('distinct', (SELECT count(*) = count(DISTINCT v)
                                   FROM unnest(parley_edits1('aaaa')) v), true);

-- Forms off (no list asked for): words as written.
SELECT pg_temp.expect('a substitution', pg_temp.read_as(pg_temp.s('metting agenda')), 'metting>meeting');
SELECT pg_temp.expect('the near hit', pg_temp.ids(pg_temp.s('metting agenda')), '-100:1');
SELECT pg_temp.expect('marked near', pg_temp.s('metting agenda') #>> '{results,0,near}', 'true');
SELECT pg_temp.expect('said in the notes', pg_temp.s('metting agenda') #>> '{notes,0}',
    'Nothing matches "metting agenda" as written; these are near matches, read as metting → meeting.');
-- metting alone: meeting, setting and melting are each one edit away;
-- setting finds two messages, the others one.
SELECT pg_temp.expect('alone: the reading that finds most', pg_temp.read_as(pg_temp.s('metting')),
                      'metting>setting');

-- Beside "printer", setting is the reading that finds something.
SELECT pg_temp.expect('the reading that finds', pg_temp.read_as(pg_temp.s('metting printer')),
                      'metting>setting');
SELECT pg_temp.expect('a deletion', pg_temp.read_as(pg_temp.s('relese notes')), 'relese>release');
SELECT pg_temp.expect('an insertion', pg_temp.read_as(pg_temp.s('agendaa')), 'agendaa>agenda');
SELECT pg_temp.expect('a transposition', pg_temp.read_as(pg_temp.s('ivnoices')), 'ivnoices>invoices');
SELECT pg_temp.expect('two words', pg_temp.read_as(pg_temp.s('relese ntoes')),
                      'ntoes>notes,relese>release');
SELECT pg_temp.expect('Russian', pg_temp.read_as(pg_temp.s('мосвке')), 'мосвке>москве');
SELECT pg_temp.expect('in a phrase', pg_temp.ids(pg_temp.s('"metting agenda"')), '-100:1');
SELECT pg_temp.expect('upper case', pg_temp.read_as(pg_temp.s('Metting Agenda')), 'metting>meeting');
-- No reading: found as written, excluded, shorter than 4 letters, no
-- near word, or a near word that finds nothing with the rest.
SELECT pg_temp.expect('known words: no reading', pg_temp.s('meeting printer') ? 'corrections', false);
SELECT pg_temp.expect('known words: nothing', pg_temp.ids(pg_temp.s('meeting printer')), '');
SELECT pg_temp.expect('excluded: no reading', pg_temp.s('agenda -metting') ? 'corrections', false);
SELECT pg_temp.expect('excluded word kept', pg_temp.ids(pg_temp.s('agenda -metting')), '-100:1');
SELECT pg_temp.expect('four letters: read', pg_temp.read_as(pg_temp.s('sunn')), 'sunn>sun');
SELECT pg_temp.expect('three letters: none', pg_temp.s('snu') ? 'corrections', false);
SELECT pg_temp.expect('no near word', pg_temp.s('zzzzqqq') ? 'corrections', false);
SELECT pg_temp.expect('nothing with the rest', pg_temp.ids(pg_temp.s('metting kubernetes')), '');
SELECT pg_temp.expect('enough hits as written: no reading', pg_temp.s('the OR metting')
                      ? 'corrections', false);
-- A surface's reading comes from its own messages: kubernetes is a word of
-- the bluesky feed only.
SELECT pg_temp.expect('own source', pg_temp.read_as(pg_temp.s('kubernets', 'bluesky')),
                      'kubernets>kubernetes');
SELECT pg_temp.expect('not another source''s word', pg_temp.s('kubernets', 'telegram') ? 'corrections',
                      false);
SELECT pg_temp.expect('nor its messages', pg_temp.ids(pg_temp.s('kubernets', 'telegram')), '');
-- Words not merged into the vocabulary yet are read too.
INSERT INTO messages (chat_id, id, sender_id, date, text) VALUES
    (-100, 6, 7, '2026-01-06 10:00Z', 'quarterly forecast ready');
SELECT pg_temp.expect('a word just stored', pg_temp.read_as(pg_temp.s('forecats')),
                      'forecats>forecast');

-- With word forms: a word found in a form only is not misspelt.
SELECT parley_search_forms_step('english,russian');
SELECT parley_search_forms_fill('english,russian', 1000);
SELECT pg_temp.expect('pending while filling', pg_temp.s('invoices') ->> 'formsPending', 'true');
SELECT pg_temp.expect('the note says so', pg_temp.s('invoices') #>> '{notes,0}' LIKE
                      'Word forms (english,russian) are still being brought in%', true);
SELECT parley_search_forms_fill('english,russian', 1000);
SELECT parley_search_forms_step('english,russian');
CREATE INDEX messages_forms_idx ON messages USING gin ((setweight(tsv, 'A') || forms));
CREATE INDEX messages_pairs_idx ON messages USING gin (parley_word_pairs(tsv));
SELECT pg_temp.expect('in use', parley_search_forms_step('english,russian') ->> 'state', 'ready');
SELECT pg_temp.expect('no note once in use', pg_temp.s('invoice') ? 'notes', false);
SELECT pg_temp.expect('a form, not a slip', pg_temp.s('reconciling') ? 'corrections', false);
SELECT pg_temp.expect('a form found', pg_temp.ids(pg_temp.s('reconciling')), '-100:4');
SELECT pg_temp.expect('a slip read in its forms', pg_temp.ids(pg_temp.s('invioces reconcile')),
                      '-100:4');
SELECT pg_temp.expect('the slip said', pg_temp.read_as(pg_temp.s('invioces reconcile')),
                      'invioces>invoices');

-- The other tools. messagesSearch: hits "match": "near", the reading.
SELECT pg_temp.expect('messagesSearch match',
    parley_tg_messages_search('{"query": "metting agenda"}', '{}') #>> '{messages,0,match}', 'near');
SELECT pg_temp.expect('messagesSearch corrections',
    parley_tg_messages_search('{"query": "metting agenda"}', '{}') #>> '{corrections,0,to}', 'meeting');
SELECT pg_temp.expect('messagesSearch exact match',
    parley_tg_messages_search('{"query": "meeting agenda"}', '{}') #>> '{messages,0,match}', 'fulltext');
-- The bluesky fallback: the post, marked, and the note.
SELECT pg_temp.expect('bluesky fallback',
    parley_bsky_archive_find('{"query": "kubernetes upgarde"}', '{}') #>> '{posts,0,near}', 'true');
SELECT pg_temp.expect('bluesky note',
    parley_bsky_archive_find('{"query": "kubernetes upgarde"}', '{}') ->> 'note' LIKE
    '%read as upgarde → upgrade.', true);
SELECT pg_temp.expect('bluesky exact: no note',
    parley_bsky_archive_find('{"query": "kubernetes"}', '{}') ? 'note', false);
-- recall: the reading in the text the model reads.
SELECT pg_temp.expect('recall near',
    parley_recall_recall('{"query": "relese notes"}', '{}') #>> '{hits,0,near}', 'true');
SELECT pg_temp.expect('recall text',
    strpos(parley_recall_recall('{"query": "relese notes"}', '{}') ->> 'text', 'relese → release') > 0,
    true);
-- The memory toolset's search over agent sessions, and chatwise's.
INSERT INTO chats (id, kind, title, external_id) VALUES (-400, 'agent_session', 'session', 's1'),
    (-500, 'ai_chat', 'Trip planning', 'cw1');
INSERT INTO messages (chat_id, id, sender_id, date, text, external_id) VALUES
    (-400, 1, 9, '2026-01-09 10:00Z', 'the deployment pipeline is green', 'm1'),
    (-500, 1, 9, '2026-01-10 10:00Z', 'pack the tent for the kayak trip', 'c1');
SELECT pg_temp.expect('memory near',
    parley_memory_search_messages('{"query": "pipelnie"}', '{}') #>> '{messages,0,near}', 'true');
SELECT pg_temp.expect('memory reading',
    parley_memory_search_messages('{"query": "pipelnie"}', '{}') #>> '{corrections,0,to}', 'pipeline');
SELECT pg_temp.expect('memory exact: not near',
    parley_memory_search_messages('{"query": "pipeline"}', '{}') #>> '{messages,0,near}', NULL);
SELECT pg_temp.expect('chatwise near',
    parley_cw_search_conversations('{"intent_query": "kayka trip"}', '{}') #>> '{results,0,near}',
    'true');
SELECT pg_temp.expect('chatwise reading',
    parley_cw_search_conversations('{"intent_query": "kayka trip"}', '{}') #>> '{corrections,0,to}',
    'kayak');
-- Its guidance offers calls the tool takes (no internal argument).
SELECT pg_temp.expect('chatwise guidance args',
    (SELECT bool_or(x -> 'args' ? '_near')
     FROM jsonb_array_elements(parley_cw_search_conversations('{"intent_query": "kayka trip"}', '{}')
                               #> '{guidance,nextActions}') x), false);
-- A telegram slip is not read as an AI chat's word.
SELECT pg_temp.expect('chatwise own words',
    parley_cw_search_conversations('{"intent_query": "agneda"}', '{}') ? 'corrections', false);

-- A slip someone made too: "relese" is in one message. A search finding
-- few messages reads it as itself or "release" (in three), its own hit
-- kept and not marked, the others marked near.
INSERT INTO messages (chat_id, id, sender_id, date, text) VALUES
    (-100, 10, 7, '2026-01-10 10:00Z', 'relese party tonight'),
    (-100, 11, 7, '2026-01-11 10:00Z', 'release the hounds'),
    (-100, 12, 7, '2026-01-12 10:00Z', 'the release went fine');
SELECT pg_temp.expect('rare: read as itself or the near word', pg_temp.read_as(pg_temp.s('relese')),
                      'relese>release');
SELECT pg_temp.expect('rare: its own hit first, not near',
    (SELECT string_agg((e ->> 'id') || ':' || coalesce(e ->> 'near', '-'), ',' ORDER BY o)
     FROM jsonb_array_elements(pg_temp.s('relese') -> 'results') WITH ORDINALITY x(e, o)),
    '10:-,12:true,11:true,3:true');
SELECT pg_temp.expect('rare: the note', pg_temp.s('relese') #>> '{notes,0}',
    'Only 1 message matches "relese" as written; near matches (marked) are added, read as relese → release.');
SELECT pg_temp.expect('rare: with another word', pg_temp.ids(pg_temp.s('relese notes')), '-100:3');
-- A near word itself rare is no reading for a word found in some.
SELECT pg_temp.expect('rare near word: none', pg_temp.s('agendas') ? 'corrections', false);
SELECT pg_temp.expect('enough hits: no reading', pg_temp.s('release') ? 'corrections', false);
-- fuzzy finds one-letter slips whose trigram similarity is low.
SELECT pg_temp.expect('fuzzy: a one-letter slip',
    pg_temp.ids(parley_search('metting', NULL, true, ARRAY[-100::bigint], NULL, NULL, NULL, NULL, NULL,
                              'time', 50, 0)) LIKE '%-100:1%', true);

-- The query's own hits come first in every order, its note saying they
-- are few: "deploymnet" is in two older messages, "deployment" in four
-- newer ones.
INSERT INTO messages (chat_id, id, sender_id, date, text) VALUES
    (-100, 20, 7, '2025-01-01 10:00Z', 'the deploymnet broke'),
    (-100, 21, 7, '2025-01-02 10:00Z', 'deploymnet again'),
    (-100, 22, 7, '2026-02-01 10:00Z', 'deployment done'),
    (-100, 23, 7, '2026-02-02 10:00Z', 'deployment two'),
    (-100, 24, 7, '2026-02-03 10:00Z', 'deployment three'),
    (-100, 25, 7, '2026-02-04 10:00Z', 'deployment four');
SELECT parley_search_words_merge(1000);
SELECT pg_temp.expect('own first, newest first',
    (SELECT string_agg((e ->> 'id') || ':' || coalesce(e ->> 'near', '-'), ',' ORDER BY o)
     FROM jsonb_array_elements(parley_search('deploymnet', NULL, false, NULL, NULL, NULL, NULL, NULL,
                                             NULL, 'time', 3, 0) -> 'results')
          WITH ORDINALITY x(e, o)),
    '21:-,20:-,25:true');
SELECT pg_temp.expect('own first, the next page',
    (SELECT string_agg((e ->> 'id') || ':' || coalesce(e ->> 'near', '-'), ',' ORDER BY o)
     FROM jsonb_array_elements(parley_search('deploymnet', NULL, false, NULL, NULL, NULL, NULL, NULL,
                                             NULL, 'time', 3, 3) -> 'results')
          WITH ORDINALITY x(e, o)),
    '24:true,23:true,22:true');
-- (and the agent session's "deployment pipeline": every source here)
SELECT pg_temp.expect('own first: count of the reading',
    parley_search('deploymnet', NULL, false, NULL, NULL, NULL, NULL, NULL, NULL, 'time', 3, 0) ->> 'count',
    '7');
SELECT pg_temp.expect('messagesSearch: own first',
    (SELECT string_agg(e ->> 'match', ',' ORDER BY o)
     FROM jsonb_array_elements(parley_tg_messages_search('{"query": "deploymnet", "limit": 3}', '{}')
                               -> 'messages') WITH ORDINALITY x(e, o)),
    'fulltext,fulltext,near');

-- A phrase's word is read as the near word alone, so the phrase stays a
-- phrase ("agenda meeting" is in no message; "Meetings: ... agenda" has
-- both words, apart).
INSERT INTO messages (chat_id, id, sender_id, date, text) VALUES
    (-100, 30, 7, '2026-03-01 10:00Z', 'Meetings: review the agenda'),
    (-100, 31, 7, '2026-03-02 10:00Z', 'metting notes here'),
    (-100, 32, 7, '2026-03-03 10:00Z', 'the metting was long'),
    (-100, 33, 7, '2026-03-04 10:00Z', 'meeting at noon');
SELECT parley_search_words_merge(1000);
SELECT pg_temp.expect('phrase: stays a phrase', pg_temp.ids(pg_temp.s('"agenda metting"')), '');
SELECT pg_temp.expect('phrase: read in order', pg_temp.ids(pg_temp.s('"metting agenda"')), '-100:1');
SELECT pg_temp.expect('a prefix keeps its suffix',
    parley_search_near_rewrite('''relese'':*'::tsquery, 'relese', ARRAY['relese', 'release'])::text,
    '''relese'':* | ''release'':*');

-- The near word is chosen in the chats searched: "setting" is in more
-- messages of the store, "meeting" in this chat.
INSERT INTO chats (id, kind, title) VALUES (-700, 'group', 'Five');
INSERT INTO messages (chat_id, id, sender_id, date, text)
SELECT -400, 100 + g, 9, '2026-04-01 10:00Z', 'setting number ' || g FROM generate_series(1, 6) g;
INSERT INTO messages (chat_id, id, sender_id, date, text) VALUES
    (-700, 1, 9, '2026-04-02 10:00Z', 'the meeting is at five');
SELECT parley_search_words_merge(1000);
SELECT pg_temp.expect('the chat''s own near word',
    pg_temp.read_as(parley_search('metting', NULL, false, ARRAY[-700::bigint], NULL, NULL, NULL, NULL,
                                  NULL, 'rank', 10, 0)), 'metting>meeting');
SELECT pg_temp.expect('inline: the chat''s own near word',
    parley_inline_messages_search('{"chatId": -700, "query": "metting"}', '{}') #>> '{items,0,near}',
    'true');

-- Words no tsquery lexeme can hold, or with backslashes: no error.
SELECT pg_temp.expect('chatwise: a backslash',
    parley_cw_search_conversations('{"intent_query": "open c:\\temp\\x"}', '{}') ->> 'status', 'ok');
SELECT pg_temp.expect('a backslash lexeme', parley_tsquery_lexeme('a\b')::tsquery::text, '''a\\b''');
SELECT pg_temp.expect('a long word', pg_temp.s(repeat('я', 1500)) ? 'corrections', false);
-- memory: the own hit first by rank.
INSERT INTO messages (chat_id, id, sender_id, date, text, external_id) VALUES
    (-400, 200, 9, '2025-01-01 10:00Z', 'settin typo', 'm200');
SELECT pg_temp.expect('memory: own first',
    parley_memory_search_messages('{"query": "settin", "limit": 2}', '{}') #>> '{messages,0,id}', 'm200');
SELECT pg_temp.expect('memory: then near',
    parley_memory_search_messages('{"query": "settin", "limit": 2}', '{}') #>> '{messages,1,near}', 'true');
