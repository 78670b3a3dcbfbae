-- 032_bot_batch_arrays: the Bot API batch functions take the batches as
-- they are staged, an array of getUpdates answers (jsonb[]), instead of
-- one JSON array of every update: parley_bot_apply_staged joined the
-- staged batches into one with jsonb_agg, rebuilding every update's JSON
-- (6-7 us an update, a tenth of applying it). The functions, with their
-- new arguments, are in src/db/sql/telegram/bot.sql; the old ones go, and
-- parley_bot_file_of, written out in the mapping (called per row, not
-- inlined).
DROP FUNCTION IF EXISTS parley_bot_apply(bigint, jsonb, bigint, boolean);
DROP FUNCTION IF EXISTS parley_bot_batch_messages(jsonb, bigint);
DROP FUNCTION IF EXISTS parley_bot_batch(jsonb, bigint);
DROP FUNCTION IF EXISTS parley_bot_file_of(jsonb, text);
