-- inline/common: what the inline toolset's tool functions share
-- (src/toolsets/inline/). Every tool is parley_inline_<tool>(a jsonb, ctx
-- jsonb): a holds the validated arguments, ctx what the daemon knows
-- ("timezone": an IANA name, default UTC; "now": the clock, which tests
-- pin). Mistakes of the caller raise PT400 naming the parameter.

-- Case- and accent-insensitive form of t, with every run of characters that
-- are not letters or digits turned into one space (so "Dena-X" and
-- "dena x" compare equal).
CREATE OR REPLACE FUNCTION parley_inline_fold(t text) RETURNS text
    LANGUAGE sql STABLE AS $$
    SELECT btrim(regexp_replace(lower(unaccent('unaccent', coalesce(t, ''))),
                                '[^[:alnum:]]+', ' ', 'g'))
$$;

-- The daemon's clock and timezone from ctx.
CREATE OR REPLACE FUNCTION parley_inline_now(ctx jsonb) RETURNS timestamptz
    LANGUAGE sql STABLE AS $$
    SELECT coalesce((ctx ->> 'now')::timestamptz, now())
$$;

CREATE OR REPLACE FUNCTION parley_inline_tz(ctx jsonb) RETURNS text
    LANGUAGE sql STABLE AS $$
    SELECT coalesce(nullif(ctx ->> 'timezone', ''), 'UTC')
$$;

-- A since/until argument as a time (parley_when, src/db/sql/when.sql:
-- today, yesterday, last week, 3 days ago, 3d ago, dates, date-times,
-- epoch seconds); days are local days of the daemon's timezone. since is
-- inclusive; until is exclusive, and a day given as until ends with that
-- day ("until: yesterday" covers all of yesterday). NULL when absent.
CREATE OR REPLACE FUNCTION parley_inline_time(a jsonb, key text, ctx jsonb) RETURNS timestamptz
    LANGUAGE sql STABLE AS $$
    SELECT parley_when(a -> key, key, key = 'until',
                       coalesce(ctx, '{}') || jsonb_build_object('timezone', parley_inline_tz(ctx)))
$$;

-- The account's own user ids: the self user of an import, and the bots.
CREATE OR REPLACE FUNCTION parley_inline_me() RETURNS bigint[]
    LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(id), '{}') FROM (
        SELECT id FROM users WHERE (extra ->> 'is_self')::boolean
        UNION SELECT external_id::bigint FROM accounts
              WHERE kind IN ('telegram_bot', 'telegram_user') AND external_id ~ '^[0-9]+$') s
$$;

-- A user's display name: first and last name (or the alias a person was
-- given, when asked for).
CREATE OR REPLACE FUNCTION parley_inline_user_name(u users) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT nullif(btrim(concat_ws(' ', u.first_name, u.last_name)), '')
$$;

CREATE OR REPLACE FUNCTION parley_inline_user_json(u users) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'userId', u.id, 'name', parley_inline_user_name(u), 'firstName', u.first_name,
        'lastName', u.last_name,
        'username', CASE WHEN u.username IS NOT NULL THEN '@' || u.username END,
        'alias', u.alias, 'isBot', CASE WHEN u.is_bot THEN true END,
        'isContact', CASE WHEN u.is_contact THEN true END))
$$;

-- The chat a chatId or userId argument names (userId: the DM with that
-- user); PT400 when neither or an unknown one, or a chat of another source
-- than Telegram (parley_tg_other_source).
CREATE OR REPLACE FUNCTION parley_inline_chat(a jsonb) RETURNS bigint
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    id bigint;
    k text;
BEGIN
    IF a ? 'chatId' THEN
        IF (a ->> 'chatId') !~ '^-?\d+$' THEN
            PERFORM parley_tg_bad(format('chatId: %s is not a chat id; find chats with '
                                         'conversations_list', (a -> 'chatId')::text));
        END IF;
        SELECT c.id, c.kind INTO id, k FROM chats c WHERE c.id = (a ->> 'chatId')::bigint;
        IF id IS NULL THEN
            PERFORM parley_tg_bad(format('chatId: no chat %s; find chats with conversations_list',
                                         a ->> 'chatId'));
        ELSIF NOT k = ANY (parley_source_kinds('telegram')) THEN
            PERFORM parley_tg_other_source('chatId', a ->> 'chatId', k, 'conversations_list');
        END IF;
        RETURN id;
    END IF;
    IF a ? 'userId' THEN
        IF (a ->> 'userId') !~ '^\d+$' THEN
            PERFORM parley_tg_bad(format('userId: %s is not a user id; find people with '
                                         'people_search', (a -> 'userId')::text));
        END IF;
        SELECT c.id INTO id FROM chats c
        WHERE c.kind = 'private' AND c.id = (a ->> 'userId')::bigint;
        IF id IS NULL THEN
            PERFORM parley_tg_bad(format('userId: no direct chat with user %s in the archive; '
                                         'find chats with conversations_list', a ->> 'userId'));
        END IF;
        RETURN id;
    END IF;
    PERFORM parley_tg_bad('give chatId, or userId for the direct chat with a person');
    RETURN NULL;
END
$$;

-- limit within [1, cap] (default dflt).
CREATE OR REPLACE FUNCTION parley_inline_limit(a jsonb, dflt integer, cap integer) RETURNS integer
    LANGUAGE sql IMMUTABLE AS $$
    SELECT least(greatest(coalesce((a ->> 'limit')::integer, dflt), 1), cap)
$$;

-- A message as the inline tools answer it; snippet may be NULL.
CREATE OR REPLACE FUNCTION parley_inline_message_json(m messages, me bigint[], snippet text)
    RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_strip_nulls(jsonb_build_object(
        'chatId', m.chat_id, 'messageId', m.id,
        'uri', format('inline://chat/%s/message/%s', m.chat_id, m.id),
        'date', m.date, 'editDate', m.edit_date, 'senderId', m.sender_id,
        'senderName', m.sender_name, 'out', m.outgoing OR m.sender_id = ANY (me),
        'text', m.text, 'snippet', snippet, 'replyToMessageId', m.reply_to_id,
        'hasLink', m.has_link, 'kind', CASE WHEN m.kind <> 'message' THEN m.kind END,
        'media', (SELECT jsonb_strip_nulls(jsonb_build_object(
                             'kind', f.kind, 'fileName', f.file_name, 'mimeType', f.mime_type,
                             'size', f.file_size, 'width', f.width, 'height', f.height,
                             'duration', f.duration))
                  FROM media f WHERE f.chat_id = m.chat_id AND f.message_id = m.id
                  ORDER BY f.ordinal LIMIT 1)))
$$;

-- Messages of chat c above its read marker that others sent.
CREATE OR REPLACE FUNCTION parley_inline_unread(c chats, me bigint[]) RETURNS bigint
    LANGUAGE sql STABLE AS $$
    SELECT count(*) FROM messages m
    WHERE m.chat_id = c.id AND m.id > coalesce(c.read_inbox_max_id, 0) AND m.kind = 'message'
      AND NOT m.outgoing AND NOT coalesce(m.sender_id = ANY (me), false)
$$;
