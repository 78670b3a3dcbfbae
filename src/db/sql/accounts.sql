-- accounts: the account rows importers file their chats under.

-- The id of the account (kind, handle), made with display_name when there
-- is none yet.
CREATE OR REPLACE FUNCTION parley_account_ensure(p_kind text, p_handle text, p_display text)
    RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
BEGIN
    SELECT id INTO v FROM accounts WHERE kind = p_kind AND handle = p_handle;
    IF v IS NULL THEN
        INSERT INTO accounts (kind, handle, display_name) VALUES (p_kind, p_handle, p_display)
        ON CONFLICT (kind, handle) DO UPDATE SET updated_at = now()
        RETURNING id INTO v;
    END IF;
    RETURN v;
END
$$;
