-- 009_bot_lease: one getUpdates poller per bot account across all daemons
-- on the database (Telegram allows one; a second gets 409). The poller
-- holds a lease in sync_state (stream 'poller'), renewed before every
-- poll; another daemon takes over once it expires. Ingest stays
-- idempotent (the offset), so a takeover in the middle of a batch is safe.
CREATE FUNCTION parley_bot_lease(p_account bigint, p_owner text, p_seconds integer)
    RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_owner text;
BEGIN
    INSERT INTO sync_state AS s (account_id, stream, cursor, last_update_at)
    VALUES (p_account, 'poller', jsonb_build_object('owner', p_owner, 'expires',
            extract(epoch FROM now()) + p_seconds), now())
    ON CONFLICT (account_id, stream) DO UPDATE
        SET cursor = EXCLUDED.cursor, last_update_at = now(), updated_at = now()
        WHERE s.cursor ->> 'owner' = p_owner
           OR (s.cursor ->> 'expires')::float8 < extract(epoch FROM now())
    RETURNING s.cursor ->> 'owner' INTO v_owner;
    RETURN v_owner IS NOT NULL;
END
$$;

CREATE FUNCTION parley_bot_lease_release(p_account bigint, p_owner text) RETURNS void
    LANGUAGE sql AS $$
    DELETE FROM sync_state
    WHERE account_id = p_account AND stream = 'poller' AND cursor ->> 'owner' = p_owner
$$;
