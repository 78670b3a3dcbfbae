-- events: what the store tells the daemons on it (LISTEN parley_events;
-- migration 026). The payload is JSON: {"chats": [chat ids], "messages":
-- [[chat id, message id], ...]}, the chats a write touched (at most 200)
-- and, for a write of at most 50 messages or an edit, the messages. The
-- daemons turn it into resources/updated for the URIs their toolsets
-- serve (toolset_t.store_changed).

-- The trigger of messages: per statement for inserts (transition table
-- new_rows), per row for edits (a statement trigger with transition tables
-- would copy every row of every update, the search fills' included).
CREATE OR REPLACE FUNCTION parley_messages_notify() RETURNS trigger
    LANGUAGE plpgsql AS $$
DECLARE
    payload jsonb;
    n integer;
BEGIN
    IF TG_LEVEL = 'ROW' THEN
        -- An edit names its message; past 50 edits in one transaction (a
        -- re-import that rewrites texts) only its chat, and NOTIFY sends
        -- one of identical payloads per transaction: bounded by the chats.
        n := coalesce(nullif(current_setting('parley.notify_edits', true), ''), '0')::integer + 1;
        PERFORM set_config('parley.notify_edits', n::text, true);
        payload := CASE WHEN n <= 50
            THEN jsonb_build_object('chats', jsonb_build_array(NEW.chat_id),
                                    'messages', jsonb_build_array(jsonb_build_array(NEW.chat_id, NEW.id)))
            ELSE jsonb_build_object('chats', jsonb_build_array(NEW.chat_id)) END;
    ELSE
        SELECT jsonb_build_object(
                   'chats', (SELECT coalesce(jsonb_agg(c), '[]')
                             FROM (SELECT DISTINCT chat_id AS c FROM new_rows ORDER BY 1 LIMIT 200) x),
                   'messages', CASE WHEN (SELECT count(*) FROM (SELECT 1 FROM new_rows LIMIT 51) y) <= 50
                                    THEN (SELECT coalesce(jsonb_agg(jsonb_build_array(chat_id, id)), '[]')
                                          FROM new_rows)
                                    ELSE '[]' END)
        INTO payload;
        IF payload -> 'chats' = '[]' THEN
            RETURN NULL;
        END IF;
    END IF;
    PERFORM pg_notify('parley_events', payload::text);
    RETURN NULL;
END
$$;
