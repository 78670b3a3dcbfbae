-- bluesky/posts: Bluesky posts kept in the archive. Each author's posts
-- form a chat of kind 'feed' (external_id: the author's DID) under the
-- account that fetched them; a post is a message whose external_id is its
-- at-URI, with a local id (record keys read as TIDs would pass 2^53, which
-- JSON clients cannot hold exactly).

-- A post as the bluesky toolset shows it ("slim": uri, rkey, did,
-- handle, displayName, text, createdAt, likes, reposts, replies, quotes,
-- images [{alt, url}], link {uri, title}, replyTo {uri}) from an
-- app.bsky.feed.defs#postView.
CREATE OR REPLACE FUNCTION parley_bsky_post_slim(p jsonb)
    RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'uri', p->>'uri', 'cid', p->>'cid', 'rkey', regexp_replace(p->>'uri', '^.*/', ''),
        'did', p->'author'->>'did', 'handle', p->'author'->>'handle',
        'displayName', nullif(p->'author'->>'displayName', ''),
        'text', coalesce(p->'record'->>'text', ''),
        'createdAt', coalesce(p->'record'->>'createdAt', p->>'indexedAt'),
        'likes', coalesce((p->>'likeCount')::bigint, 0),
        'reposts', coalesce((p->>'repostCount')::bigint, 0),
        'replies', coalesce((p->>'replyCount')::bigint, 0),
        'quotes', coalesce((p->>'quoteCount')::bigint, 0),
        'images', (SELECT jsonb_agg(jsonb_build_object('alt', coalesce(i->>'alt', ''),
                                                       'url', i->>'fullsize'))
                   FROM jsonb_array_elements(CASE
                       WHEN jsonb_typeof(p->'embed'->'images') = 'array' THEN p->'embed'->'images'
                       WHEN jsonb_typeof(p->'embed'->'media'->'images') = 'array'
                           THEN p->'embed'->'media'->'images'
                       ELSE '[]' END) i),
        'link', CASE WHEN jsonb_typeof(p->'embed'->'external') = 'object' THEN
                    jsonb_build_object('uri', p->'embed'->'external'->>'uri',
                                       'title', p->'embed'->'external'->>'title') END,
        'replyTo', CASE WHEN p->'record'->'reply'->'parent'->>'uri' IS NOT NULL THEN
                       jsonb_build_object('uri', p->'record'->'reply'->'parent'->>'uri') END))
$$;

-- Stores posts (app.bsky.feed.defs#postView objects, as searchPosts,
-- getPostThread and getAuthorFeed answer them) fetched as account
-- p_account (id, or NULL); posts already there are updated (text,
-- counts). Returns how many were stored.
CREATE OR REPLACE FUNCTION parley_bsky_store_posts(p_account bigint, p_posts jsonb)
    RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    p jsonb;
    v_user bigint;
    v_chat bigint;
    v_date timestamptz;
    v_id bigint;
    n integer := 0;
BEGIN
    IF jsonb_typeof(p_posts) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'posts: an array expected' USING ERRCODE = 'PT400';
    END IF;
    FOR p IN SELECT parley_bsky_post_slim(e) FROM jsonb_array_elements(p_posts) e
             WHERE jsonb_typeof(e) = 'object' AND e->>'uri' LIKE 'at://%'
               AND e->'author'->>'did' IS NOT NULL AND e->'author'->>'handle' IS NOT NULL
    LOOP
        v_user := NULL;
        v_chat := NULL;
        INSERT INTO users (external_id, username, first_name, metadata_updated_at)
        VALUES (p->>'did', p->>'handle', p->>'displayName', now())
        ON CONFLICT (external_id) DO UPDATE
            SET username = EXCLUDED.username,
                first_name = coalesce(EXCLUDED.first_name, users.first_name),
                updated_at = now()
            WHERE users.username IS DISTINCT FROM EXCLUDED.username
               OR users.first_name IS DISTINCT FROM coalesce(EXCLUDED.first_name, users.first_name)
        RETURNING id INTO v_user;
        IF v_user IS NULL THEN
            SELECT id INTO v_user FROM users WHERE external_id = p->>'did';
        END IF;

        SELECT id INTO v_chat FROM chats
        WHERE account_id IS NOT DISTINCT FROM p_account AND external_id = p->>'did'
          AND kind = 'feed';
        IF v_chat IS NULL THEN
            INSERT INTO chats (account_id, kind, external_id, title, username)
            VALUES (p_account, 'feed', p->>'did',
                    coalesce(p->>'displayName', '@' || (p->>'handle')), p->>'handle')
            ON CONFLICT (account_id, external_id) WHERE external_id IS NOT NULL
                DO UPDATE SET updated_at = now()
            RETURNING id INTO v_chat;
        END IF;

        BEGIN
            v_date := (p->>'createdAt')::timestamptz;
        EXCEPTION WHEN others THEN
            v_date := now();
        END;
        v_id := coalesce((SELECT id FROM messages
                          WHERE chat_id = v_chat AND external_id = p->>'uri'),
                         nextval('local_id_seq'));
        INSERT INTO messages (chat_id, id, external_id, sender_id, sender_name, date, text,
                              has_link, media_kind, extra)
        VALUES (v_chat, v_id, p->>'uri', v_user, p->>'handle', v_date, p->>'text',
                p ? 'link' OR coalesce(p->>'text', '') ~ 'https?://',
                CASE WHEN p ? 'images' THEN 'photo' END,
                p - 'uri' - 'rkey' - 'did' - 'handle' - 'displayName' - 'text' - 'createdAt')
        ON CONFLICT (chat_id, external_id) WHERE external_id IS NOT NULL DO UPDATE
            SET text = EXCLUDED.text, extra = EXCLUDED.extra, has_link = EXCLUDED.has_link,
                media_kind = EXCLUDED.media_kind, updated_at = now()
            WHERE messages.text IS DISTINCT FROM EXCLUDED.text
               OR messages.extra IS DISTINCT FROM EXCLUDED.extra;
        UPDATE chats SET last_message_date = v_date, last_message_id = v_id, updated_at = now()
        WHERE id = v_chat AND (last_message_date IS NULL OR last_message_date < v_date);
        n := n + 1;
    END LOOP;
    RETURN n;
END
$$;

-- The posts of the archive matching qx (a query of words as written) in
-- every form of its words (the archive search's words,
-- src/db/sql/search.sql), slim, newest first; with orig (the query asked,
-- when qx is its near reading), each post not matching orig "near": true.
CREATE OR REPLACE FUNCTION parley_bsky_archive_posts(qx tsquery, p_limit integer, orig tsquery)
    RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    langs text := parley_search_languages();
    q tsquery := parley_forms_query(qx, langs);
    q0 tsquery := parley_forms_query(orig, langs);
    res jsonb;
BEGIN
    -- A near reading's posts matching orig (the query's own) come first.
    SELECT coalesce(jsonb_agg(CASE WHEN y.near THEN y.post || '{"near": true}' ELSE y.post END
                              ORDER BY y.near, y.date DESC, y.id DESC), '[]'::jsonb) INTO res
    FROM (
        SELECT * FROM (
            SELECT DISTINCT ON (m.date, m.external_id) m.date, m.id,
                   orig IS NOT NULL
                   AND NOT (CASE WHEN langs = '' THEN m.tsv
                                 ELSE setweight(m.tsv, 'A') || m.forms END) @@ q0 AS near,
                   jsonb_strip_nulls(jsonb_build_object(
                       'uri', m.external_id, 'rkey', regexp_replace(m.external_id, '^.*/', ''),
                       'did', c.external_id, 'handle', c.username, 'text', m.text,
                       'createdAt', to_char(m.date AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                       'displayName', u.first_name))
                   || coalesce(m.extra - 'cid', '{}') AS post
            FROM messages m
            JOIN chats c ON c.id = m.chat_id AND c.kind = ANY (parley_source_kinds('bluesky'))
            LEFT JOIN users u ON u.id = m.sender_id
            WHERE (langs = '' AND m.tsv @@ q)
               OR (langs <> '' AND (setweight(m.tsv, 'A') || m.forms) @@ q)
            ORDER BY m.date DESC, m.external_id, m.id DESC) x
        ORDER BY x.near, x.date DESC, x.id DESC
        LIMIT greatest(1, least(coalesce(p_limit, 25), 100))
    ) y;
    RETURN res;
END
$$;

-- The posts of the archive matching p_query (every word, in any of its
-- forms), for the bluesky toolset when the service cannot be reached.
CREATE OR REPLACE FUNCTION parley_bsky_archive_search(p_query text, p_limit integer)
    RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT parley_bsky_archive_posts(plainto_tsquery('simple', p_query), p_limit, NULL)
$$;

-- The bluesky toolset's calls (archive_call: args, ctx). Stores the posts
-- a tool fetched: args {account: id, posts: [postView]}; {stored: n}.
CREATE OR REPLACE FUNCTION parley_bsky_archive_store(p_args jsonb, p_ctx jsonb)
    RETURNS jsonb LANGUAGE sql AS $$
    SELECT jsonb_build_object('stored',
        parley_bsky_store_posts((p_args->>'account')::bigint, coalesce(p_args->'posts', '[]')))
$$;

-- The archive's posts for a search when the service cannot answer: args
-- {query, limit}; {posts: [slim], corrections, note}. When few match and
-- a word in few posts has a near spelling (src/db/sql/search_near.sql),
-- the near reading's posts (those not matching the query "near": true),
-- "corrections" [{from, to}] and the "note" saying so; the note also says
-- when the word forms are not in use yet.
CREATE OR REPLACE FUNCTION parley_bsky_archive_find(p_args jsonb, p_ctx jsonb)
    RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    qx tsquery := plainto_tsquery('simple', p_args ->> 'query');
    lim integer := greatest(1, least(coalesce((p_args ->> 'limit')::integer, 25), 100));
    posts jsonb := parley_bsky_archive_posts(qx, lim, NULL);
    have integer := jsonb_array_length(posts);
    near jsonb;
    more jsonb;
    notes text[] := '{}';
BEGIN
    IF have < least(lim, (parley_search_near_limits() ->> 'few')::integer) THEN
        near := parley_search_near(qx, parley_search_languages(), 'bluesky', NULL, have);
        IF near IS NOT NULL THEN
            more := parley_bsky_archive_posts((near ->> 'query')::tsquery, lim, qx);
            IF jsonb_array_length(more) > have THEN
                posts := more;
                notes := notes || parley_search_near_note(p_args ->> 'query',
                                                          near -> 'corrections', have);
            ELSE
                near := NULL;
            END IF;
        END IF;
    END IF;
    IF qx IS NOT NULL THEN
        notes := notes || parley_search_forms_note();
    END IF;
    RETURN jsonb_strip_nulls(jsonb_build_object(
        'posts', posts, 'corrections', near -> 'corrections',
        'note', nullif(array_to_string(notes, ' '), '')));
END
$$;
