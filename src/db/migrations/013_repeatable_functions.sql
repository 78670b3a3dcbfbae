-- 013_repeatable_functions: functions leave the migrations. They now live
-- in repeatable files (src/db/sql/, listed in dependency order by
-- src/db/sql/manifest) that every start applies with CREATE OR REPLACE
-- after the migrations, under the same lock. This drops what has no
-- place there: the telegram toolset's dispatcher (every tool is now its
-- own function, named in the toolset's table) with the copy that migration
-- 011 wrapped, and the one-argument forms that became (args, ctx).
DROP FUNCTION IF EXISTS parley_tg_tool(text, jsonb, jsonb);
DROP FUNCTION IF EXISTS parley_tg_tool_005(text, jsonb, jsonb);
DROP FUNCTION IF EXISTS parley_tg_messages_search(jsonb);
DROP FUNCTION IF EXISTS parley_tg_tags_auto(jsonb);
DROP FUNCTION IF EXISTS parley_tg_metadata_targets(jsonb);
