-- 019_bot_batch: one message of a Bot API getUpdates batch mapped to the
-- columns of messages (parley_bot_batch_messages, src/db/sql/telegram/
-- bot.sql), so a batch is mapped once and applied set by set from an array.
CREATE TYPE parley_bot_msg AS (
    update_id         bigint,
    m                 jsonb,
    chat_id           bigint,
    id                bigint,
    topic_id          bigint,
    sender_id         bigint,
    sender_name       text,
    date              timestamptz,
    edit_date         timestamptz,
    text              text,
    entities          jsonb,
    reply_to_id       bigint,
    forward_from_name text,
    media_kind        text,
    has_link          boolean,
    kind              text,
    action            jsonb,
    extra             jsonb,
    file_kind         text,
    file              jsonb
);

-- Replaced by the scalar parley_bot_file_kind and parley_bot_file_of.
DROP FUNCTION IF EXISTS parley_bot_file(jsonb);
