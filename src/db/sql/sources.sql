-- sources: which surface a chat belongs to, by its kind (migration 001's
-- chats.kind). Every toolset chooses its rows with these, and recall
-- names its hits' sources with them, so that a surface never shows
-- another surface's rows (docs/architecture.md, "Sources and surfaces"):
--   telegram  private, group, supergroup, channel, forum: a message
--             service's chats (export, bot or account); the telegram and
--             inline toolsets
--   chatwise  ai_chat: AI-assistant chats; the chatwise toolset
--   agents    agent_session: imported agent transcripts; the memory
--             toolset
--   bluesky   feed: Bluesky authors' posts; the bluesky toolset
-- ("memory", a memory-lane database, is not in the store.)

-- The source of a chat of kind p_kind; NULL for a kind no source owns.
CREATE OR REPLACE FUNCTION parley_source_of(p_kind text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN p_kind IN ('private', 'group', 'supergroup', 'channel', 'forum') THEN 'telegram'
        WHEN p_kind = 'ai_chat' THEN 'chatwise'
        WHEN p_kind = 'agent_session' THEN 'agents'
        WHEN p_kind = 'feed' THEN 'bluesky'
    END
$$;

-- The chat kinds of source p_source ('{}' for a source with none in the
-- store): the inverse of parley_source_of.
CREATE OR REPLACE FUNCTION parley_source_kinds(p_source text) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE p_source
        WHEN 'telegram' THEN ARRAY['private', 'group', 'supergroup', 'channel', 'forum']
        WHEN 'chatwise' THEN ARRAY['ai_chat']
        WHEN 'agents' THEN ARRAY['agent_session']
        WHEN 'bluesky' THEN ARRAY['feed']
        ELSE '{}'::text[]
    END
$$;

-- Which sources the store holds data of (the default toolset selection,
-- src/app/auto.c): {"telegram", "chatwise", "agents", "bluesky": bool}.
-- An account counts as data: a bot's or a user's Telegram account, a
-- Bluesky login.
CREATE OR REPLACE FUNCTION parley_sources_present(a jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object(
        'telegram', EXISTS (SELECT 1 FROM chats WHERE kind = ANY (parley_source_kinds('telegram')))
                    OR EXISTS (SELECT 1 FROM accounts
                               WHERE kind IN ('telegram_bot', 'telegram_user')),
        'chatwise', EXISTS (SELECT 1 FROM chats WHERE kind = ANY (parley_source_kinds('chatwise'))),
        'agents', EXISTS (SELECT 1 FROM chats WHERE kind = ANY (parley_source_kinds('agents'))),
        'bluesky', EXISTS (SELECT 1 FROM chats WHERE kind = ANY (parley_source_kinds('bluesky')))
                   OR EXISTS (SELECT 1 FROM accounts WHERE kind = 'bluesky'))
$$;

-- Every source of the store, in the order above.
CREATE OR REPLACE FUNCTION parley_sources() RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY['telegram', 'chatwise', 'agents', 'bluesky']
$$;

-- The chat kinds of every source but p_source.
CREATE OR REPLACE FUNCTION parley_source_other_kinds(p_source text) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(k), '{}')
    FROM unnest(parley_sources()) AS s, unnest(parley_source_kinds(s)) AS k
    WHERE s <> p_source
$$;

-- The ids of source p_source's chats when the store also holds chats of
-- another source; NULL when it holds none (then there is nothing to keep
-- out, and a store of one source is read as before). Both questions go
-- through chats_kind_idx (migration 028), not through every chat.
CREATE OR REPLACE FUNCTION parley_source_chats(p_source text) RETURNS bigint[]
    LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN EXISTS (SELECT 1 FROM chats c
                             WHERE c.kind = ANY (parley_source_other_kinds(p_source)))
                THEN ARRAY(SELECT c.id FROM chats c
                           WHERE c.kind = ANY (parley_source_kinds(p_source)) ORDER BY c.id)
           END
$$;

-- The ids of the other sources' chats ('{}' when the store holds none).
CREATE OR REPLACE FUNCTION parley_source_others(p_source text) RETURNS bigint[]
    LANGUAGE sql STABLE AS $$
    SELECT ARRAY(SELECT c.id FROM chats c
                 WHERE c.kind = ANY (parley_source_other_kinds(p_source)) ORDER BY c.id)
$$;
