-- inline/people: people_search (people by name, username, alias or
-- phone, with their direct chat) and account_me (the account's own user).

CREATE OR REPLACE FUNCTION parley_inline_people_search(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    q text := parley_inline_fold(a ->> 'query');
    lim integer := parley_inline_limit(a, 20, 100);
BEGIN
    IF q = '' THEN
        PERFORM parley_tg_bad('query: give a name, a username, an alias or a phone number');
    END IF;
    RETURN jsonb_build_object('items', coalesce((
        SELECT jsonb_agg(parley_inline_user_json(u) || jsonb_strip_nulls(jsonb_build_object(
                             'chatId', (SELECT c.id FROM chats c
                                        WHERE c.kind = 'private' AND c.id = u.id),
                             'score', x.score))
                         ORDER BY x.score DESC, u.id)
        FROM (SELECT u.id, greatest(parley_inline_match(u.username, q) * 100,
                                    parley_inline_match(parley_inline_user_name(u), q) * 90,
                                    parley_inline_match(u.alias, q) * 85,
                                    CASE WHEN u.phone IS NOT NULL AND length(regexp_replace(q, '\D', '', 'g')) >= 4
                                              AND regexp_replace(u.phone, '\D', '', 'g')
                                                  LIKE '%' || regexp_replace(q, '\D', '', 'g') || '%'
                                         THEN 70 ELSE 0 END) AS score
              FROM users u
              WHERE u.external_id IS NULL) x -- Telegram's people (parley_tg_user)
        JOIN users u ON u.id = x.id
        WHERE x.score > 0
        LIMIT lim), '[]'), 'limit', lim);
END
$$;

CREATE OR REPLACE FUNCTION parley_inline_account_me(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'user', (SELECT parley_inline_user_json(u) FROM users u
                 WHERE u.id = ANY (parley_inline_me()) ORDER BY u.id LIMIT 1),
        'accounts', (SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                                'kind', ac.kind, 'handle', ac.handle, 'userId', ac.external_id,
                                'default', ac.is_default)) ORDER BY ac.id)
                     FROM accounts ac WHERE ac.kind IN ('telegram_bot', 'telegram_user')),
        'timezone', parley_inline_tz(ctx)))
$$;
