-- 036_retire_inline_content: parley_inline_content (src/db/sql/inline/
-- common.sql until 2026-11-29) is retired: the inline tools filter a
-- message's kind through telegram/common.sql's parley_tg_content, the one
-- copy of that filter. A repeatable file no longer defining a function
-- leaves it in the store; this drops it (nothing calls it: the inline
-- functions that did are replaced by the repeatable files applied after
-- the migrations).
DROP FUNCTION IF EXISTS parley_inline_content(messages, text);
