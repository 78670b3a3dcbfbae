-- sources: parley_source_of and parley_source_kinds are inverses over
-- every chat kind the store allows (migration 001's CHECK), and every
-- kind has a source.
SELECT pg_temp.expect('every kind has a source',
    (SELECT array_agg(k ORDER BY k) FROM unnest(ARRAY['private', 'group', 'supergroup',
        'channel', 'forum', 'ai_chat', 'agent_session', 'feed']) k
     WHERE parley_source_of(k) IS NULL), NULL::text[]);
SELECT pg_temp.expect('kinds of the source of a kind hold it',
    (SELECT bool_and(k = ANY (parley_source_kinds(parley_source_of(k))))
     FROM unnest(ARRAY['private', 'group', 'supergroup', 'channel', 'forum', 'ai_chat',
                       'agent_session', 'feed']) k), true);
SELECT pg_temp.expect('the source of a source''s kinds is it',
    (SELECT bool_and(parley_source_of(k) = s)
     FROM unnest(ARRAY['telegram', 'chatwise', 'agents', 'bluesky']) s,
          unnest(parley_source_kinds(s)) k), true);
SELECT pg_temp.expect('memory has no chats in the store', parley_source_kinds('memory'),
                      '{}'::text[]);
-- A chat kind the CHECK constraint allows but this file does not name
-- would fail the first test: the constraint's list is read here.
SELECT pg_temp.expect('the constraint allows no other kind',
    (SELECT count(*) FROM regexp_matches(pg_get_constraintdef(oid), '''([a-z_]+)''', 'g') m
     WHERE parley_source_of(m[1]) IS NULL)::integer, 0)
FROM pg_constraint WHERE conname = 'chats_kind_check';

-- parley_sources_present: what the default toolset selection serves.
SELECT pg_temp.expect('an empty store', parley_sources_present('{}', '{}'),
    '{"telegram": false, "chatwise": false, "agents": false, "bluesky": false}'::jsonb);
INSERT INTO chats (kind, title) VALUES ('ai_chat', 'a'), ('agent_session', 'b');
INSERT INTO accounts (kind, handle) VALUES ('bluesky', 'ann.bsky.social');
SELECT pg_temp.expect('chats and a login', parley_sources_present('{}', '{}'),
    '{"telegram": false, "chatwise": true, "agents": true, "bluesky": true}'::jsonb);
INSERT INTO accounts (kind, handle) VALUES ('telegram_bot', 'demo_bot');
SELECT pg_temp.expect('a bot counts', parley_sources_present('{}', '{}') -> 'telegram', 'true'::jsonb);
