-- when: the one reader of a time a tool argument gives (every toolset's
-- since/until, fromDate/toDate, minDate, reference_timestamp and
-- time_window's start/end go through parley_when). ctx is what the daemon
-- knows: "timezone" (an IANA name or UTC offset: the timezone setting;
-- default UTC) and "now" (the clock, which tests pin). A caller's mistake
-- raises SQLSTATE PT400 naming the parameter and what it accepts.

-- What parley_when accepts, for the error messages and the schemas.
CREATE OR REPLACE FUNCTION parley_when_forms() RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT 'now, today, yesterday, last week, 3 days ago (or 3d, 12h ago), 2026-01-31, '
           '2026-01-31T18:00:00Z, or epoch seconds or milliseconds'
$$;

-- v (a jsonb string or number) as a time, or NULL when v is absent, null or
-- empty. Accepted: "now"; "today", "yesterday" (local days of the
-- timezone); "last week", "last month", "last year", "last N days" (that
-- long before now); "N {s,m,h,d,w} [ago]" and "N {seconds,minutes,hours,
-- days,weeks,months,years} ago"; YYYY-MM-DD (a local day); an ISO date-time
-- (with a zone, or local); epoch seconds or milliseconds (a number, or
-- digits in a string). A day is where it starts; as an upper bound
-- (is_until) it is included whole: its end, the next day's start.
CREATE OR REPLACE FUNCTION parley_when(v jsonb, key text, is_until boolean, ctx jsonb)
    RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
DECLARE
    tz text := coalesce(nullif(ctx ->> 'timezone', ''), 'UTC');
    now_ timestamptz := coalesce((ctx ->> 'now')::timestamptz, now());
    today date := (now_ AT TIME ZONE tz)::date;
    s text;
    n numeric;
    day date;
    m text[];
BEGIN
    IF v IS NULL OR jsonb_typeof(v) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(v) = 'number' THEN
        n := v::numeric;
    ELSIF jsonb_typeof(v) = 'string' THEN
        s := lower(btrim(v #>> '{}'));
        IF s = '' THEN
            RETURN NULL;
        END IF;
        IF s ~ '^\d{9,14}$' THEN
            n := s::numeric;
        END IF;
    END IF;
    IF n IS NOT NULL THEN
        IF abs(n) >= 1e11 THEN
            n := n / 1000; -- milliseconds
        END IF;
        IF n < -62135596800 OR n > 253402300799 THEN -- outside the years 1 to 9999
            RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = format(
                '%s: %s is outside the years 1 to 9999', key, v::text);
        END IF;
        RETURN to_timestamp(n);
    END IF;
    IF s IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = format(
            '%s: %s is not a time; use %s', key, v::text, parley_when_forms());
    END IF;
    s := regexp_replace(s, '\s+', ' ', 'g');
    IF s = 'now' THEN
        RETURN now_;
    ELSIF s = 'today' THEN
        day := today;
    ELSIF s = 'yesterday' THEN
        day := today - 1;
    ELSIF s ~ '^\d{4}-\d\d-\d\d$' THEN
        BEGIN
            day := s::date;
        EXCEPTION WHEN OTHERS THEN
            RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = format(
                '%s: %s is not a date', key, v::text);
        END;
    ELSE
        s := regexp_replace(s, '^last (week|month|year)$', '1 \1 ago');
        s := regexp_replace(s, '^(?:the )?last (\d+) (\w+)$', '\1 \2 ago');
        m := regexp_match(s, '^(\d{1,9}) ?(s|sec|secs|seconds?|m|min|mins|minutes?|h|hours?|'
                             'd|days?|w|weeks?|months?|y|years?)(?: ago)?$');
        IF m IS NOT NULL THEN
            RETURN now_ - CASE
                WHEN m[2] IN ('months', 'month') THEN make_interval(months => m[1]::integer)
                WHEN m[2] IN ('y', 'year', 'years') THEN make_interval(years => m[1]::integer)
                ELSE make_interval(secs => m[1]::bigint * CASE
                    WHEN m[2] ~ '^s' THEN 1 WHEN m[2] ~ '^m' THEN 60 WHEN m[2] ~ '^h' THEN 3600
                    WHEN m[2] ~ '^d' THEN 86400 ELSE 604800 END) END;
        END IF;
        IF s ~ '^\d{4}-\d\d-\d\d[t ]\d\d:\d\d' THEN
            BEGIN
                IF s ~ '(z|[+-]\d\d(:?\d\d)?)$' THEN
                    RETURN s::timestamptz;
                END IF;
                RETURN (s::timestamp) AT TIME ZONE tz;
            EXCEPTION WHEN OTHERS THEN
                NULL;
            END;
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = format(
            '%s: %s is not a time; use %s', key, v::text, parley_when_forms());
    END IF;
    RETURN ((CASE WHEN is_until THEN day + 1 ELSE day END)::timestamp) AT TIME ZONE tz;
END
$$;
