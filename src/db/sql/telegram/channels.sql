-- telegram/channels: the telegram toolset's chat tools (list, get,
-- metadata, tags) and forum topics.

CREATE OR REPLACE FUNCTION parley_tg_channels_list(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT parley_tg_chats_page(a, 50, 500, 'channels', parley_source_kinds('telegram'),
                                coalesce((a ->> 'includeInactive')::boolean, false), NULL)
$$;

CREATE OR REPLACE FUNCTION parley_tg_channels_search(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_needs_connector('channelsSearch',
        'channelsList lists the chats in the archive, groupsList filters them by title');
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_channels_get(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
BEGIN
    chat := parley_tg_chat(a, 'channelId');
    RETURN (SELECT parley_tg_chat_info_json(c) || jsonb_build_object(
                'firstMessageDate', (SELECT min(date) FROM messages m WHERE m.chat_id = c.id),
                'syncJobs', coalesce((SELECT jsonb_agg(parley_tg_job_json(j))
                                      FROM sync_jobs j WHERE j.chat_id = c.id), '[]'))
            FROM chats c WHERE c.id = chat);
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_channels_metadata_get(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
BEGIN
    chat := parley_tg_chat(a, 'channelId');
    RETURN (SELECT jsonb_strip_nulls(jsonb_build_object('channelId', c.id,
                'peerTitle', c.title,
                'username', CASE WHEN c.username IS NOT NULL THEN '@' || c.username END,
                'about', c.about, 'metadataUpdatedAt', c.metadata_updated_at))
            FROM chats c WHERE c.id = chat);
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_channels_set_sync(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
BEGIN
    chat := parley_tg_chat(a, 'channelId');
    UPDATE chats SET sync_enabled = (a ->> 'enabled')::boolean, updated_at = now()
    WHERE id = chat;
    RETURN jsonb_build_object('channelId', chat, 'syncEnabled', (a ->> 'enabled')::boolean);
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_channels_metadata_refresh(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_needs_connector('channelsMetadataRefresh',
        'channelsMetadataGet returns the metadata stored in the archive');
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_channels_tags_set(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
BEGIN
    chat := parley_tg_chat(a, 'channelId');
    DELETE FROM chat_tags WHERE chat_id = chat AND source = coalesce(a ->> 'source', 'manual');
    INSERT INTO chat_tags (chat_id, tag, source)
    SELECT DISTINCT chat, lower(btrim(t)), coalesce(a ->> 'source', 'manual')
    FROM jsonb_array_elements_text(a -> 'tags') AS t WHERE btrim(t) <> '';
    RETURN jsonb_build_object('channelId', chat, 'tags', coalesce((
        SELECT jsonb_agg(tag ORDER BY tag) FROM chat_tags
        WHERE chat_id = chat AND source = coalesce(a ->> 'source', 'manual')), '[]'));
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_channels_tags_list(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
BEGIN
    chat := parley_tg_chat(a, 'channelId');
    RETURN jsonb_build_object('channelId', chat, 'tags', coalesce((
        SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object('tag', t.tag, 'source', t.source,
                                                              'confidence', t.confidence))
                         ORDER BY t.source, t.confidence DESC NULLS FIRST, t.tag)
        FROM chat_tags t
        WHERE t.chat_id = chat AND (a ->> 'source' IS NULL OR t.source = a ->> 'source')), '[]'));
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_channels_tags_search(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    lim integer;
BEGIN
    lim := parley_tg_limit(a, 100, 500);
    RETURN parley_tg_page(a, 100, 500) || jsonb_build_object('tag', lower(a ->> 'tag'),
        'channels', coalesce((
        SELECT jsonb_agg(parley_tg_chat_json(c) || jsonb_build_object('confidence', x.confidence,
                                                                      'source', x.source)
                         ORDER BY x.confidence DESC NULLS FIRST, c.id)
        FROM (SELECT DISTINCT ON (t.chat_id) t.chat_id, t.confidence, t.source
              FROM chat_tags t
              WHERE t.tag = lower(a ->> 'tag')
                AND (a ->> 'source' IS NULL OR t.source = a ->> 'source')
                AND t.chat_id IN (SELECT c.id FROM chats c
                                  WHERE c.kind = ANY (parley_source_kinds('telegram')))
              ORDER BY t.chat_id, t.confidence DESC NULLS FIRST LIMIT lim) x
        JOIN chats c ON c.id = x.chat_id), '[]'));
END
$$;

-- channelsTagsAuto: a chat's most distinctive words against the whole
-- archive (ts_stat document frequencies: share of the chat's messages with
-- the word, divided by the share of all Telegram messages with it: the
-- other sources' messages count in neither), words of three
-- letters or more that are not English or Russian stop words, at least
-- three occurrences; the top five become tags
-- with source "auto" and a confidence in 0..1 (the score over the best
-- score of the chat).
CREATE OR REPLACE FUNCTION parley_tg_channels_tags_auto(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    lim integer := parley_tg_limit(a, 50, 200);
    total bigint;
    ids bigint[];
    c bigint;
    out jsonb := '[]';
    chat_n bigint;
BEGIN
    SELECT count(*) INTO total FROM messages m
    WHERE m.text IS NOT NULL
      AND m.chat_id IN (SELECT c.id FROM chats c WHERE c.kind = ANY (parley_source_kinds('telegram')));
    ids := parley_tg_chats(a, 'channelIds');
    IF ids IS NULL THEN
        SELECT array_agg(id) INTO ids FROM (SELECT id FROM chats
                                            WHERE active AND kind = ANY (parley_source_kinds('telegram'))
                                            ORDER BY last_message_date DESC NULLS LAST
                                            LIMIT lim) s;
    END IF;
    FOREACH c IN ARRAY coalesce(ids, '{}') LOOP
        SELECT count(*) INTO chat_n FROM messages WHERE chat_id = c AND text IS NOT NULL;
        CONTINUE WHEN chat_n = 0;
        DELETE FROM chat_tags WHERE chat_id = c AND source = 'auto';
        WITH g AS (SELECT word, ndoc FROM ts_stat(
                       'SELECT m.tsv FROM messages m JOIN chats c ON c.id = m.chat_id '
                       'WHERE c.kind = ANY (parley_source_kinds(''telegram''))')),
             l AS (SELECT word, ndoc FROM ts_stat(format(
                       'SELECT tsv FROM messages WHERE chat_id = %s', c))),
             s AS (SELECT l.word, (l.ndoc::float8 / chat_n) / (g.ndoc::float8 / greatest(total, 1))
                              * ln(1 + l.ndoc) AS score
                   FROM l JOIN g USING (word)
                   WHERE length(l.word) >= 3 AND l.word !~ '^[0-9]+$' AND l.ndoc >= 3
                     -- not a stop word of the languages PostgreSQL knows best
                     AND length(to_tsvector('english', l.word)) > 0
                     AND length(to_tsvector('russian', l.word)) > 0),
             top AS (SELECT word, score, max(score) OVER () AS best FROM s
                     ORDER BY score DESC, word LIMIT 5)
        INSERT INTO chat_tags (chat_id, tag, source, confidence)
        SELECT c, word, 'auto', round((score / best)::numeric, 3) FROM top;
        out := out || jsonb_build_array(jsonb_build_object(
            'channelId', c, 'title', (SELECT title FROM chats WHERE id = c),
            'tags', coalesce((SELECT jsonb_agg(jsonb_build_object('tag', tag, 'confidence', confidence,
                                                                   'source', 'auto')
                                               ORDER BY confidence DESC, tag)
                              FROM chat_tags WHERE chat_id = c AND source = 'auto'), '[]')));
    END LOOP;
    RETURN jsonb_build_object('channels', out, 'method',
        'words of the chat that are most over-represented against the whole archive '
        '(ts_stat document frequency ratio times log frequency; top 5, confidence relative to '
        'the best)');
END
$$;

-- metadataTargets (internal): which chats channelsMetadataRefresh fetches: the ones named (each must
-- be known), else the connector's chats, least recently refreshed first.
-- Without force, chats refreshed in the last hour are skipped; onlyMissing
-- keeps chats never refreshed.
CREATE OR REPLACE FUNCTION parley_tg_metadata_targets(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    lim integer := parley_tg_limit(a, 20, 100);
    force boolean := coalesce((a ->> 'force')::boolean, false);
    only_missing boolean := coalesce((a ->> 'onlyMissing')::boolean, false);
    named bigint[];
BEGIN
    named := parley_tg_chats(a, 'channelIds');
    RETURN parley_tg_page(a, 20, 100) || jsonb_build_object(
        'channelIds', coalesce((
            SELECT jsonb_agg(c.id ORDER BY c.metadata_updated_at NULLS FIRST, c.id)
            FROM (SELECT c.id, c.metadata_updated_at FROM chats c
                  WHERE (CASE WHEN named IS NOT NULL THEN c.id = ANY (named)
                              ELSE c.account_id IN (SELECT ac.id FROM accounts ac
                                                    WHERE ac.kind IN ('telegram_bot', 'telegram_user')) END)
                    AND (force OR c.metadata_updated_at IS NULL
                         OR c.metadata_updated_at < now() - interval '1 hour')
                    AND (NOT only_missing OR c.metadata_updated_at IS NULL)
                  ORDER BY c.metadata_updated_at NULLS FIRST, c.id
                  LIMIT lim) c), '[]'),
        'skipped', (SELECT count(*) FROM chats c
                    WHERE named IS NOT NULL AND c.id = ANY (named) AND NOT force
                      AND c.metadata_updated_at >= now() - interval '1 hour'));
END
$$;

-- metadataStore (internal): stores what the connector fetched for one chat
-- of channelsMetadataRefresh: {channelId, chat: getChat's result,
-- memberCount}.
CREATE OR REPLACE FUNCTION parley_tg_metadata_store(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql AS $$
    SELECT parley_bot_chat_metadata((a ->> 'channelId')::bigint, a -> 'chat',
                                    (a ->> 'memberCount')::integer)
$$;

CREATE OR REPLACE FUNCTION parley_tg_topics_list(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    chat bigint;
    lim integer;
BEGIN
    chat := parley_tg_chat(a, 'channelId');
    lim := parley_tg_limit(a, 100, 500);
    RETURN parley_tg_page(a, 100, 500) || jsonb_build_object('channelId', chat, 'topics', coalesce((
        SELECT jsonb_agg(x.j ORDER BY x.last DESC NULLS LAST, x.id) FROM (
            SELECT t.id, coalesce(t.last_message_date, t.created_date) AS last,
                   jsonb_strip_nulls(jsonb_build_object('topicId', t.id, 'title', t.title,
                       'closed', t.closed, 'createdDate', t.created_date,
                       'creatorId', t.creator_id,
                       'messageCount', (SELECT count(*) FROM messages m
                                        WHERE m.chat_id = t.chat_id AND m.topic_id = t.id),
                       'lastMessageDate', (SELECT max(date) FROM messages m
                                           WHERE m.chat_id = t.chat_id AND m.topic_id = t.id))) AS j
            FROM topics t
            WHERE t.chat_id = chat
              AND (a ->> 'query' IS NULL OR t.title ILIKE '%' || (a ->> 'query') || '%'
                   OR t.title % (a ->> 'query'))
            ORDER BY coalesce(t.last_message_date, t.created_date) DESC NULLS LAST, t.id
            LIMIT lim) x), '[]'));
END
$$;

-- topicsSearch: topicsList's answer for the topics whose title matches
-- query (its arguments are topicsList's plus query).
CREATE OR REPLACE FUNCTION parley_tg_topics_search(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN parley_tg_topics_list(a, ctx);
END
$$;
