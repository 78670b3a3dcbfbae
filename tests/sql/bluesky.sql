-- bluesky: the Bluesky accounts (src/db/sql/bluesky/accounts.sql) and posts
-- (src/db/sql/bluesky/posts.sql): the first account is the default, a new
-- handle for a DID updates its row, default and delete move the default,
-- a handle that moved to another DID, postViews stored once (updated
-- counts, no duplicate, ids JSON clients hold exactly), slim posts, the archive search, and the refresh job queued
-- only when due.

SELECT pg_temp.expect('no account yet', parley_bsky_account_get(NULL), NULL::jsonb);
SELECT pg_temp.expect('first login is the default',
    parley_bsky_account_save('alice.test', 'did:plc:a', 'http://pds', '\x0102') - 'id',
    '{"handle": "alice.test", "did": "did:plc:a", "service": "http://pds", "default": true}');
SELECT pg_temp.expect('second is not',
    parley_bsky_account_save('bob.test', 'did:plc:b', 'http://pds', '\x03') ->> 'default', 'false');
SELECT pg_temp.expect('a new handle for the same DID updates the row',
    parley_bsky_account_save('alice2.test', 'did:plc:a', 'http://pds2', '\x04') ->> 'handle',
    'alice2.test');
SELECT pg_temp.expect('one row per DID',
    (SELECT count(*) FROM accounts WHERE kind = 'bluesky'), 2::bigint);
SELECT pg_temp.expect('a handle that moved to another DID: the old identity goes',
    parley_bsky_account_save('bob.test', 'did:plc:b2', 'http://pds', '\x05') ->> 'did', 'did:plc:b2');
SELECT pg_temp.expect('and back',
    parley_bsky_account_save('bob.test', 'did:plc:b', 'http://pds', '\x03') ->> 'did', 'did:plc:b');
SELECT pg_temp.expect('default by NULL, handle with @, DID',
    ARRAY[parley_bsky_account_get(NULL) ->> 'handle', parley_bsky_account_get('@Alice2.test') ->> 'did',
          parley_bsky_account_get('did:plc:b') ->> 'handle', parley_bsky_account_get('') ->> 'credentials'],
    ARRAY['alice2.test', 'did:plc:a', 'bob.test', '04']);
SELECT pg_temp.expect('the list has no credentials',
    parley_bsky_account_list()::text ~ 'credentials', false);
SELECT pg_temp.expect('default moves', parley_bsky_account_default('bob.test') ->> 'handle', 'bob.test');
SELECT pg_temp.expect('one default',
    (SELECT array_agg(handle) FROM accounts WHERE kind = 'bluesky' AND is_default), ARRAY['bob.test']);
SELECT pg_temp.expect_error('default of nobody', $$SELECT parley_bsky_account_default('nobody')$$,
    'PT404', 'no Bluesky account nobody');
SELECT pg_temp.expect_error('delete needs a name', $$SELECT parley_bsky_account_delete(NULL)$$,
    'PT404', 'no Bluesky account');

-- posts
CREATE FUNCTION pg_temp.pv(rkey text, handle text, txt text, likes int, extra jsonb DEFAULT '{}')
    RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('uri', 'at://did:plc:' || handle || '/app.bsky.feed.post/' || rkey,
        'cid', 'bafy' || rkey, 'author', jsonb_build_object('did', 'did:plc:' || handle,
        'handle', handle || '.test', 'displayName', upper(handle)),
        'record', jsonb_build_object('text', txt, 'createdAt', '2024-10-06T10:15:33.000Z'),
        'likeCount', likes, 'repostCount', 0, 'replyCount', 1, 'quoteCount', 0) || extra
$$;
SELECT pg_temp.expect('slim post',
    parley_bsky_post_slim(pg_temp.pv('3l5tkrnrau727', 'a', E'## Hi\n- x', 3,
        '{"embed": {"$type": "app.bsky.embed.images#view", "images": [{"alt": "cat", "fullsize": "https://i/1"}]},
          "record": {"text": "t", "createdAt": "2024-10-06T10:15:33.000Z",
                     "reply": {"parent": {"uri": "at://did:plc:b/app.bsky.feed.post/3l5teuw5gk527"}}}}')),
    '{"uri": "at://did:plc:a/app.bsky.feed.post/3l5tkrnrau727", "cid": "bafy3l5tkrnrau727",
      "rkey": "3l5tkrnrau727", "did": "did:plc:a", "handle": "a.test", "displayName": "A",
      "text": "t", "createdAt": "2024-10-06T10:15:33.000Z", "likes": 3, "reposts": 0,
      "replies": 1, "quotes": 0, "images": [{"alt": "cat", "url": "https://i/1"}],
      "replyTo": {"uri": "at://did:plc:b/app.bsky.feed.post/3l5teuw5gk527"}}'::jsonb);
SELECT pg_temp.expect('stored',
    parley_bsky_store_posts(1, jsonb_build_array(pg_temp.pv('3l5tkrnrau727', 'a', 'first words', 1),
                                                 pg_temp.pv('3l5teuw5gk527', 'a', 'older words', 0,
                                                     '{"record": {"text": "older words", "createdAt": "2024-10-05T10:00:00Z"}}'),
                                                 pg_temp.pv('self', 'c', 'not a tid', 0),
                                                 '"junk"'::jsonb, '{"uri": "x"}'::jsonb)), 3);
SELECT pg_temp.expect('again, counts updated: no duplicate',
    parley_bsky_store_posts(1, jsonb_build_array(pg_temp.pv('3l5tkrnrau727', 'a', 'first words', 7))), 1);
SELECT pg_temp.expect('one feed chat per author',
    (SELECT array_agg(username || ':' || kind ORDER BY username) FROM chats WHERE kind = 'feed'),
    ARRAY['a.test:feed', 'c.test:feed']);
SELECT pg_temp.expect('messages keyed by at-URI, ids exact in JSON',
    (SELECT array_agg((m.id < 2 ^ 53)::text || ' ' || (m.extra ->> 'likes'))
     FROM messages m WHERE m.external_id LIKE '%/3l5tkrnrau727'), ARRAY['true 7']);
SELECT pg_temp.expect('the newest is the chat''s last message',
    (SELECT last_message_id FROM chats WHERE username = 'a.test'),
    (SELECT id FROM messages WHERE external_id LIKE '%/3l5tkrnrau727'));
SELECT pg_temp.expect('authors are users', (SELECT first_name FROM users WHERE external_id = 'did:plc:a'), 'A');
SELECT pg_temp.expect_error('posts must be an array', $$SELECT parley_bsky_store_posts(1, '{}')$$,
    'PT400', 'an array');
SELECT pg_temp.expect('the archive finds them',
    (SELECT array_agg(p ->> 'handle' || ' ' || (p ->> 'text') || ' ' || (p ->> 'likes'))
     FROM jsonb_array_elements(parley_bsky_archive_find('{"query": "words"}', '{}') -> 'posts') p),
    ARRAY['a.test first words 7', 'a.test older words 0']);

-- the refresh job
SELECT pg_temp.expect('queued when there is a default', parley_bsky_refresh_schedule(900, false), true);
SELECT pg_temp.expect('not again while pending', parley_bsky_refresh_schedule(900, true), false);
UPDATE sync_jobs SET status = 'idle', last_run_at = now() WHERE class = 'bluesky.refresh';
SELECT pg_temp.expect('not due yet', parley_bsky_refresh_schedule(900, false), false);
SELECT pg_temp.expect('now (after a login)', parley_bsky_refresh_schedule(900, true), true);
UPDATE sync_jobs SET status = 'idle', last_run_at = now() - interval '1 hour' WHERE class = 'bluesky.refresh';
SELECT pg_temp.expect('due', parley_bsky_refresh_schedule(900, false), true);
SELECT pg_temp.expect('one job row', (SELECT count(*) FROM sync_jobs WHERE class = 'bluesky.refresh'), 1::bigint);
SELECT pg_temp.expect('delete the default: another becomes it',
    parley_bsky_account_delete('bob.test'), '{"deleted": "bob.test", "default": "alice2.test"}'::jsonb);
SELECT parley_bsky_account_delete('alice2.test');
SELECT pg_temp.expect('no account: nothing queued', parley_bsky_refresh_schedule(0, true), false);
