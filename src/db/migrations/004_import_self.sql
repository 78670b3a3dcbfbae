-- 004_import_self: the account's own user from a whole-account export
-- ("personal_information"): upserted into users and marked with
-- extra.is_self, so tools can tell "me" from the others.
CREATE FUNCTION parley_tg_import_self(p jsonb) RETURNS bigint
    LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
BEGIN
    IF p ->> 'user_id' IS NULL OR p ->> 'user_id' !~ '^[0-9]+$' THEN
        RETURN NULL;
    END IF;
    v_id := (p ->> 'user_id')::bigint;
    INSERT INTO users AS u (id, first_name, last_name, username, phone, about, extra)
    VALUES (v_id, nullif(p ->> 'first_name', ''), nullif(p ->> 'last_name', ''),
            nullif(ltrim(p ->> 'username', '@'), ''), nullif(p ->> 'phone_number', ''),
            nullif(p ->> 'bio', ''), '{"is_self": true}')
    ON CONFLICT (id) DO UPDATE
        SET first_name = coalesce(EXCLUDED.first_name, u.first_name),
            last_name = coalesce(EXCLUDED.last_name, u.last_name),
            username = coalesce(EXCLUDED.username, u.username),
            phone = coalesce(EXCLUDED.phone, u.phone), about = coalesce(EXCLUDED.about, u.about),
            extra = coalesce(u.extra, '{}') || EXCLUDED.extra, updated_at = now()
        WHERE (u.first_name, u.last_name, u.username, u.phone, u.about)
              IS DISTINCT FROM (coalesce(EXCLUDED.first_name, u.first_name),
                                coalesce(EXCLUDED.last_name, u.last_name),
                                coalesce(EXCLUDED.username, u.username),
                                coalesce(EXCLUDED.phone, u.phone),
                                coalesce(EXCLUDED.about, u.about))
           OR NOT coalesce(u.extra, '{}') @> EXCLUDED.extra;
    RETURN v_id;
END
$$;
