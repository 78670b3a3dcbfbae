-- 028_surface_scope: each surface answers from its own sources (issue #28;
-- docs/architecture.md, "Sources and surfaces"). parley_search takes the
-- source whose chats it searches (p_source, last, default NULL: every
-- chat), so its old signature goes here and src/db/sql/search.sql creates
-- the new one. chats_kind_idx finds a source's chats, and whether the
-- store holds another source's (parley_source_chats), without reading
-- every chat.
DROP FUNCTION IF EXISTS parley_search(text, text, boolean, bigint[], bigint, bigint, timestamptz,
                                      timestamptz, text, text, integer, integer);
CREATE INDEX chats_kind_idx ON chats (kind);
