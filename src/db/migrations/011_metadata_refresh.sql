-- 011_metadata_refresh: channelsMetadataRefresh through the connector, and
-- a cancelled sync job that stays cancelled.
--
-- The dispatcher grows by wrapping: parley_tg_tool answers the connector's
-- two helper calls here and hands every other tool to the dispatcher of
-- migration 005 (renamed parley_tg_tool_005).

-- A job that syncJobsCancel ended while it ran is no longer in progress:
-- its executor's outcome must not bring it back.
CREATE OR REPLACE FUNCTION parley_jobs_finish(p jsonb) RETURNS void
    LANGUAGE sql AS $$
    UPDATE sync_jobs j
    SET status = CASE
            WHEN p ->> 'status' = 'retry' AND j.attempts >= coalesce((p ->> 'max_attempts')::integer, 5)
                THEN 'error'
            WHEN p ->> 'status' = 'retry' THEN 'pending'
            ELSE p ->> 'status' END,
        error = p ->> 'error',
        fetched = j.fetched + coalesce((p ->> 'fetched')::bigint, 0),
        chat_id = coalesce((p ->> 'chat_id')::bigint, j.chat_id),
        next_attempt_at = CASE WHEN p ->> 'status' = 'retry'
            THEN now() + make_interval(secs => least(2 ^ j.attempts, 300) * (0.75 + random() / 2))
            ELSE j.next_attempt_at END,
        lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
    WHERE j.id = (p ->> 'id')::bigint AND j.lease_owner = p ->> 'owner'
      AND j.status = 'in_progress'
$$;

ALTER FUNCTION parley_tg_tool(text, jsonb, jsonb) RENAME TO parley_tg_tool_005;

-- Which chats channelsMetadataRefresh fetches: the ones named (each must
-- be known), else the connector's chats, least recently refreshed first.
-- Without force, chats refreshed in the last hour are skipped; onlyMissing
-- keeps chats never refreshed.
CREATE FUNCTION parley_tg_metadata_targets(a jsonb) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    lim integer := parley_tg_limit(a, 20, 100);
    force boolean := coalesce((a ->> 'force')::boolean, false);
    only_missing boolean := coalesce((a ->> 'onlyMissing')::boolean, false);
    named bigint[];
BEGIN
    IF jsonb_typeof(a -> 'channelIds') = 'array' THEN
        SELECT array_agg(parley_tg_chat(jsonb_build_object('channelIds', e), 'channelIds'))
        INTO named FROM jsonb_array_elements(a -> 'channelIds') AS e;
    END IF;
    RETURN parley_tg_page(a, 20, 100) || jsonb_build_object(
        'channelIds', coalesce((
            SELECT jsonb_agg(c.id ORDER BY c.metadata_updated_at NULLS FIRST, c.id)
            FROM (SELECT c.id, c.metadata_updated_at FROM chats c
                  WHERE (CASE WHEN named IS NOT NULL THEN c.id = ANY (named)
                              ELSE c.account_id IN (SELECT ac.id FROM accounts ac
                                                    WHERE ac.kind = 'telegram_bot') END)
                    AND (force OR c.metadata_updated_at IS NULL
                         OR c.metadata_updated_at < now() - interval '1 hour')
                    AND (NOT only_missing OR c.metadata_updated_at IS NULL)
                  ORDER BY c.metadata_updated_at NULLS FIRST, c.id
                  LIMIT lim) c), '[]'),
        'skipped', (SELECT count(*) FROM chats c
                    WHERE named IS NOT NULL AND c.id = ANY (named) AND NOT force
                      AND c.metadata_updated_at >= now() - interval '1 hour'));
END
$$;

CREATE FUNCTION parley_tg_tool(tool text, args jsonb, ctx jsonb) RETURNS jsonb
    LANGUAGE plpgsql AS $$
BEGIN
    CASE tool
    WHEN 'metadataTargets' THEN
        RETURN parley_tg_metadata_targets(coalesce(args, '{}'));
    WHEN 'metadataStore' THEN
        -- {channelId, chat: getChat's result, memberCount}
        RETURN parley_bot_chat_metadata((args ->> 'channelId')::bigint, args -> 'chat',
                                        (args ->> 'memberCount')::integer);
    ELSE
        RETURN parley_tg_tool_005(tool, args, ctx);
    END CASE;
END
$$;
