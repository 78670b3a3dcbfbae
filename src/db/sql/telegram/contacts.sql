-- telegram/contacts: the telegram toolset's contact tools.

CREATE OR REPLACE FUNCTION parley_tg_contacts_search(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    lim integer;
BEGIN
    lim := parley_tg_limit(a, 50, 500);
    RETURN parley_tg_page(a, 50, 500) || jsonb_build_object('contacts', coalesce((
        SELECT jsonb_agg(parley_tg_user_json(u) ORDER BY x.score DESC, u.id) FROM (
            SELECT u.id, greatest(similarity(u.search_text, a ->> 'query'),
                                  word_similarity(a ->> 'query', u.search_text),
                                  CASE WHEN u.search_text ILIKE '%' || (a ->> 'query') || '%'
                                       THEN 1 ELSE 0 END,
                                  CASE WHEN u.phone IS NOT NULL AND
                                            regexp_replace(u.phone, '\D', '', 'g') LIKE
                                            '%' || nullif(regexp_replace(a ->> 'query', '\D', '', 'g'), '') || '%'
                                       THEN 1 ELSE 0 END) AS score
            FROM users u
            WHERE u.external_id IS NULL) x -- Telegram's people (parley_tg_user)
        JOIN users u ON u.id = x.id
        WHERE x.score >= 0.3
        LIMIT lim), '[]'));
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_contacts_get(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    uid bigint;
BEGIN
    uid := parley_tg_user(a, 'userId');
    RETURN (SELECT parley_tg_user_json(u) || jsonb_build_object(
                'messageCount', (SELECT count(*) FROM messages m WHERE m.sender_id = u.id),
                'lastMessageDate', (SELECT max(date) FROM messages m WHERE m.sender_id = u.id),
                'chats', coalesce((SELECT jsonb_agg(DISTINCT m.chat_id) FROM messages m
                                   WHERE m.sender_id = u.id), '[]'))
            FROM users u WHERE u.id = uid);
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_contacts_alias_set(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    uid bigint;
BEGIN
    uid := parley_tg_user(a, 'userId');
    UPDATE users SET alias = nullif(btrim(a ->> 'alias'), ''), updated_at = now() WHERE id = uid;
    RETURN jsonb_build_object('userId', uid, 'alias', nullif(btrim(a ->> 'alias'), ''));
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_contacts_alias_remove(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    uid bigint;
BEGIN
    uid := parley_tg_user(a, 'userId');
    UPDATE users SET alias = NULL, updated_at = now() WHERE id = uid;
    RETURN jsonb_build_object('userId', uid, 'removed', true);
END
$$;

-- contactsTagsAdd and contactsTagsRemove: a person's tags with those of
-- the argument tags added (adding; lower case, blank ones left out) or
-- taken away, sorted; answers {userId, tags}.
CREATE OR REPLACE FUNCTION parley_tg_contacts_tags_edit(a jsonb, adding boolean) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    uid bigint := parley_tg_user(a, 'userId');
BEGIN
    UPDATE users u SET tags = CASE WHEN adding
            THEN (SELECT coalesce(array_agg(DISTINCT t ORDER BY t), '{}') FROM (
                      SELECT unnest(u.tags) AS t
                      UNION SELECT lower(btrim(x)) FROM jsonb_array_elements_text(a -> 'tags') x
                      WHERE btrim(x) <> '') s)
            ELSE (SELECT coalesce(array_agg(t ORDER BY t), '{}') FROM unnest(u.tags) t
                  WHERE t NOT IN (SELECT lower(btrim(x))
                                  FROM jsonb_array_elements_text(a -> 'tags') x)) END,
        updated_at = now()
    WHERE u.id = uid;
    RETURN (SELECT jsonb_build_object('userId', u.id, 'tags', to_jsonb(u.tags))
            FROM users u WHERE u.id = uid);
END
$$;

CREATE OR REPLACE FUNCTION parley_tg_contacts_tags_add(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql AS $$
    SELECT parley_tg_contacts_tags_edit(a, true)
$$;

CREATE OR REPLACE FUNCTION parley_tg_contacts_tags_remove(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql AS $$
    SELECT parley_tg_contacts_tags_edit(a, false)
$$;

CREATE OR REPLACE FUNCTION parley_tg_contacts_notes_set(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    uid bigint;
BEGIN
    uid := parley_tg_user(a, 'userId');
    UPDATE users SET notes = nullif(a ->> 'notes', ''), updated_at = now() WHERE id = uid;
    RETURN jsonb_build_object('userId', uid, 'notes', nullif(a ->> 'notes', ''));
END
$$;
