-- 029_telegram_user: the store side of the TDLib user connector
-- (src/db/sql/telegram/user.sql). An account keeps its connector's facts
-- that are not columns (a telegram_user's phone and TDLib session
-- directory) in accounts.extra. The mapped message of migration 019 gains
-- what a user account's messages carry and the Bot API's do not: a reply
-- into another chat and the message's own direction (NULL: the caller's
-- p_outgoing, as for the bot's batches).
ALTER TABLE accounts ADD COLUMN extra jsonb;
ALTER TYPE parley_bot_msg ADD ATTRIBUTE reply_to_chat_id bigint, ADD ATTRIBUTE outgoing boolean;
