-- bluesky/accounts: the Bluesky accounts logged in (accounts rows of kind
-- 'bluesky'): handle, DID (external_id), PDS (base_url) and the session,
-- sealed by parleyd (credentials: it never leaves these functions except to
-- the connector, and no tool result carries it).

-- The account named p_account (a handle with or without @, or a DID), or
-- the default one when p_account is NULL or ''. NULL when there is none.
CREATE OR REPLACE FUNCTION parley_bsky_account_find(p_account text)
    RETURNS accounts LANGUAGE sql STABLE AS $$
    SELECT a.* FROM accounts a
    WHERE a.kind = 'bluesky' AND a.enabled
      AND CASE WHEN coalesce(p_account, '') = '' THEN a.is_default
               ELSE lower(a.handle) = lower(ltrim(p_account, '@')) OR a.external_id = p_account END
    ORDER BY a.is_default DESC, a.id
    LIMIT 1
$$;

-- The account with its sealed session (hex), for the connector.
CREATE OR REPLACE FUNCTION parley_bsky_account_get(p_account text)
    RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('id', a.id, 'handle', a.handle, 'did', a.external_id,
                              'service', a.base_url, 'default', a.is_default,
                              'credentials', encode(a.credentials, 'hex'))
    FROM parley_bsky_account_find(p_account) a
    WHERE a.id IS NOT NULL
$$;

-- Stores a new session for the account with DID p_did (found by DID, so a
-- changed handle updates the row); the first account becomes the default.
CREATE OR REPLACE FUNCTION parley_bsky_account_save(p_handle text, p_did text, p_service text,
                                                    p_credentials bytea)
    RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v accounts;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('parley_bsky_accounts'));
    -- A row with this handle and another DID is an old identity.
    DELETE FROM accounts WHERE kind = 'bluesky' AND handle = p_handle
        AND external_id IS DISTINCT FROM p_did;
    UPDATE accounts SET handle = p_handle, base_url = p_service, credentials = p_credentials,
                        enabled = true, last_login_at = now(), updated_at = now()
    WHERE kind = 'bluesky' AND external_id = p_did
    RETURNING * INTO v;
    IF v.id IS NULL THEN
        INSERT INTO accounts (kind, handle, external_id, base_url, credentials, last_login_at,
                              is_default)
        VALUES ('bluesky', p_handle, p_did, p_service, p_credentials, now(),
                NOT EXISTS (SELECT 1 FROM accounts WHERE kind = 'bluesky' AND is_default))
        RETURNING * INTO v;
    END IF;
    RETURN jsonb_build_object('id', v.id, 'handle', v.handle, 'did', v.external_id,
                              'service', v.base_url, 'default', v.is_default);
END
$$;

-- Replaces the session of account p_id after a refresh.
CREATE OR REPLACE FUNCTION parley_bsky_session_set(p_id bigint, p_credentials bytea)
    RETURNS void LANGUAGE sql AS $$
    UPDATE accounts SET credentials = p_credentials, updated_at = now()
    WHERE id = p_id AND kind = 'bluesky'
$$;

CREATE OR REPLACE FUNCTION parley_bsky_account_list()
    RETURNS jsonb LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object('handle', handle, 'did', external_id,
                                                 'service', base_url, 'default', is_default,
                                                 'lastLoginAt', last_login_at)
                              ORDER BY is_default DESC, handle), '[]'::jsonb)
    FROM accounts WHERE kind = 'bluesky' AND enabled
$$;

-- The account named p_account (a name is required), under the lock that
-- orders changes of the default. PT404 when there is no such account.
CREATE OR REPLACE FUNCTION parley_bsky_account_lock(p_account text)
    RETURNS accounts LANGUAGE plpgsql AS $$
DECLARE
    v accounts;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('parley_bsky_accounts'));
    SELECT * INTO v FROM parley_bsky_account_find(p_account);
    IF v.id IS NULL OR coalesce(p_account, '') = '' THEN
        RAISE EXCEPTION 'no Bluesky account %', coalesce(p_account, '') USING ERRCODE = 'PT404';
    END IF;
    RETURN v;
END
$$;

-- Makes p_account the default. PT404 when there is no such account.
CREATE OR REPLACE FUNCTION parley_bsky_account_default(p_account text)
    RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v accounts;
BEGIN
    v := parley_bsky_account_lock(p_account);
    UPDATE accounts SET is_default = false WHERE kind = 'bluesky' AND is_default AND id <> v.id;
    UPDATE accounts SET is_default = true, updated_at = now() WHERE id = v.id;
    RETURN jsonb_build_object('handle', v.handle, 'did', v.external_id, 'default', true);
END
$$;

-- Forgets p_account and its session (its archived posts stay). When it
-- was the default, the account logged in most recently becomes the default.
CREATE OR REPLACE FUNCTION parley_bsky_account_delete(p_account text)
    RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    v accounts;
    d text;
BEGIN
    v := parley_bsky_account_lock(p_account);
    DELETE FROM accounts WHERE id = v.id;
    IF v.is_default THEN
        UPDATE accounts SET is_default = true
        WHERE id = (SELECT id FROM accounts WHERE kind = 'bluesky' AND enabled
                    ORDER BY last_login_at DESC NULLS LAST, id LIMIT 1)
        RETURNING handle INTO d;
    ELSE
        SELECT handle INTO d FROM accounts WHERE kind = 'bluesky' AND is_default;
    END IF;
    RETURN jsonb_build_object('deleted', v.handle, 'default', d);
END
$$;

-- Queues the bluesky.refresh job (one row for every daemon on the
-- database: account NULL, channel 'default') when a default account exists
-- and the job has not run for p_interval_s (or p_now: at once). Returns
-- true when it was queued now.
CREATE OR REPLACE FUNCTION parley_bsky_refresh_schedule(p_interval_s integer, p_now boolean)
    RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM accounts WHERE kind = 'bluesky' AND is_default AND enabled) THEN
        RETURN false;
    END IF;
    INSERT INTO sync_jobs (class, channel, status, realtime)
    VALUES ('bluesky.refresh', 'default', 'pending', false)
    ON CONFLICT (account_id, class, channel) DO UPDATE
        SET status = 'pending', attempts = 0, error = NULL, next_attempt_at = now(),
            updated_at = now()
        WHERE sync_jobs.status IN ('idle', 'error')
          AND (p_now OR sync_jobs.last_run_at IS NULL
               OR sync_jobs.last_run_at < now() - make_interval(secs => p_interval_s));
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n > 0;
END
$$;
