-- search_forms: the word forms of the archive search (search_languages;
-- what src/archive/search_forms.c runs): the search's vector and the
-- forms' query, the row trigger that fills messages.tsv and
-- messages.forms, and the steps that bring a list of forms in (fill,
-- index, switch). parley_search_run (search.sql) calls these; split from
-- search.sql, which owned them until 2026-11-29. The vocabulary of the
-- fuzzy mode is search_words.sql's.

-- ---- word forms (search_languages; src/archive/search_forms.c) ----------
-- messages.forms (migration 022) holds the lexemes of a message in each
-- configured text search configuration. The search matches the vector
-- parley_search_vector_sql names: the exact words (messages.tsv, the
-- simple configuration's) weighted A, then those lexemes ("tsvector ||
-- tsvector" puts them after the exact ones, weighted D). Exact phrases are
-- matched on the A positions; every other word on any of its forms. Only
-- the configurations' parses are stored: the exact words are there
-- already, and joining two stored vectors costs a copy, not a parse.

-- The SQL of that vector for the table aliased m ('' for no alias: the
-- index). The index and every query use this text, so that the planner
-- sees the same expression.
CREATE OR REPLACE FUNCTION parley_search_vector_sql(alias text) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT format('(setweight(%1$stsv, ''A'') || %1$sforms)',
                  CASE WHEN alias <> '' THEN alias || '.' ELSE '' END)
$$;

-- The configurations of langs (a resolved list) that a text of ASCII
-- characters only needs, comma-separated: a configuration whose parser and
-- whose dictionaries for every token type such a text can hold (all but
-- word, hword and hword_part, which need a letter beyond ASCII) are those
-- of one before it in the list reads that text into the same lexemes, so
-- it is left out. 'english,russian' gives 'english' (russian reads ASCII
-- words with english_stem too): an English message is parsed once for its
-- forms, not twice. langs itself when nothing can be left out, and in a
-- database whose encoding is not UTF-8 (the callers tell ASCII text by
-- having as many bytes as characters, which holds there for any text).
CREATE OR REPLACE FUNCTION parley_forms_ascii_list(langs text) RETURNS text
    LANGUAGE sql STABLE AS $$
    WITH l AS (
        SELECT u.c, u.o, cfg.oid, cfg.cfgparser
        FROM unnest(string_to_array(langs, ',')) WITH ORDINALITY AS u(c, o)
        JOIN pg_ts_config cfg ON cfg.oid = u.c::regconfig),
    m AS (
        SELECT l.c, l.o, l.cfgparser,
               (SELECT array_agg(mm.maptokentype || ':' || mm.mapseqno || ':' || mm.mapdict
                                 ORDER BY mm.maptokentype, mm.mapseqno)
                FROM pg_ts_config_map mm
                WHERE mm.mapcfg = l.oid
                  AND mm.maptokentype NOT IN (SELECT t.tokid FROM ts_token_type(l.cfgparser) AS t
                                              WHERE t.alias IN ('word', 'hword', 'hword_part'))) AS sig
        FROM l)
    SELECT CASE WHEN current_setting('server_encoding') <> 'UTF8' THEN langs
                ELSE string_agg(m.c, ',' ORDER BY m.o) END
    FROM m
    WHERE NOT EXISTS (SELECT 1 FROM m e
                      WHERE e.o < m.o AND e.cfgparser = m.cfgparser AND e.sig IS NOT DISTINCT FROM m.sig)
$$;

-- messages.forms of t for langs (a resolved list), NULL for none: the
-- lexemes of each configuration in turn. The trigger below and the
-- backfill fill the column with it. A text over 32 kB (which could reach
-- the tsvector's 1 MB limit) gets the forms of a prefix (shortened as
-- parley_text_tsv does) whose forms fit beside the row's exact words
-- (parley_text_tsv, migration 025) in the search's vector
-- (parley_search_vector_sql, which the forms index computes for every row
-- written): one oversized message never fails a write. Every shorter text
-- gets the forms of all of it, as before.
CREATE OR REPLACE FUNCTION parley_forms_vector(t text, langs text) RETURNS tsvector
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    v tsvector := '';
    l text;
    exact tsvector;
    n integer;
    msg text;
    need numeric;
BEGIN
    IF t IS NULL OR coalesce(langs, '') = '' THEN
        RETURN NULL;
    END IF;
    IF octet_length(t) <= 32768 THEN
        FOREACH l IN ARRAY string_to_array(langs, ',') LOOP
            v := v || to_tsvector(l::regconfig, t);
        END LOOP;
        RETURN v;
    END IF;
    exact := setweight(parley_text_tsv(t), 'A');
    n := length(t);
    LOOP
        BEGIN
            v := '';
            FOREACH l IN ARRAY string_to_array(langs, ',') LOOP
                v := v || to_tsvector(l::regconfig, left(t, n));
            END LOOP;
            PERFORM exact || v; -- the search's vector of the row must fit too
            RETURN v;
        EXCEPTION WHEN program_limit_exceeded THEN
            IF n = 0 THEN
                RAISE;
            END IF;
            GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
            need := substring(msg FROM '\((\d{1,12}) ')::numeric;
            n := CASE WHEN need > 1048576 THEN least(n - 1, floor(n::numeric * 943718 / need)::integer)
                      ELSE n / 2 END;
        END;
    END LOOP;
END
$$;

-- What messages.forms keeps of forms, a row's parley_forms_vector: the
-- lexemes that are not among its exact words (exact, messages.tsv). The
-- search's vector joins both (parley_search_vector_sql), and every query
-- lexeme of a form matches on any position (parley_forms_query), so a
-- form that is also a word as written (english reads a Cyrillic word into
-- itself; a stem that is its word: meet, great) matches through the exact
-- word's entry alone: 188 bytes of forms a message of the benchmark's
-- archive were 59 without them, for the same hits (tests/sql/search_forms.sql).
-- NULL for no forms.
CREATE OR REPLACE FUNCTION parley_forms_new(forms tsvector, exact tsvector) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ts_delete(forms, coalesce(tsvector_to_array(exact), '{}'))
$$;

-- Holds the writers of messages off until this transaction ends, once
-- those writing now are done (the lock SHARE ROW EXCLUSIVE, which also
-- waits for a CREATE INDEX CONCURRENTLY, a VACUUM or an ANALYZE of
-- messages). Asked for without waiting, every 50 ms, p_tries times, so
-- that writers never queue behind the request; then once queued, for at
-- most p_queue_ms (0: no limit of its own): queued past deadlock_timeout,
-- the request has PostgreSQL cancel an autovacuum that holds messages
-- (which a request that never waits does not), and take part in deadlock
-- detection. Past that, SQLSTATE 55P03 (lock_not_available).
CREATE OR REPLACE FUNCTION parley_messages_hold_writers(p_tries integer, p_queue_ms integer)
    RETURNS void
    LANGUAGE plpgsql AS $$
DECLARE
    before text := current_setting('lock_timeout');
BEGIN
    FOR i IN 1 .. p_tries LOOP
        BEGIN
            LOCK TABLE messages IN SHARE ROW EXCLUSIVE MODE NOWAIT;
            RETURN;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM pg_sleep(0.05);
        END;
    END LOOP;
    PERFORM set_config('lock_timeout', p_queue_ms::text, true);
    BEGIN
        LOCK TABLE messages IN SHARE ROW EXCLUSIVE MODE;
    EXCEPTION WHEN lock_not_available THEN
        RAISE EXCEPTION USING ERRCODE = '55P03',
            MESSAGE = 'messages is being written, or an index of it built: the word '
                      'forms'' list changes once it is not';
    END;
    PERFORM set_config('lock_timeout', before, true);
END
$$;

-- The row trigger's function, parley_messages_forms(), for the target
-- list langs (the one asked for last, being filled or in use): it fills
-- messages.tsv (the exact words: parley_text_tsv, migration 025) and
-- messages.forms (parley_forms_vector, less the lexemes of the exact
-- words: parley_forms_new) of every row written (text inserted or
-- changed). It is written with the list in it, so a row pays neither a
-- look-up of search_forms nor parley_forms_vector's loop over the list
-- (a third of the trigger's cost, bench/README.md "The cost of a row"):
-- a text of up to 32 kB is read by each configuration's to_tsvector
-- directly, a longer one by the functions that keep a vector within
-- PostgreSQL's limit; a text of ASCII characters only by the
-- configurations of parley_forms_ascii_list (english,russian: english
-- alone, the same lexemes). Called by this file (for
-- the target in the store) and by parley_search_forms_step when the target
-- changes, in the same transaction. Configuration names come from
-- search_forms (resolved by parley_search_languages_resolve) and go in
-- quoted (format %L). Returns whether the function was replaced (false:
-- it already read so).
CREATE OR REPLACE FUNCTION parley_messages_forms_define(langs text) RETURNS boolean
    LANGUAGE plpgsql AS $$
DECLARE
    alist text := CASE WHEN coalesce(langs, '') <> '' THEN parley_forms_ascii_list(langs) END;
    forms text;
    forms_ascii text;
    long_langs text;
    body text;
BEGIN
    SELECT coalesce(string_agg(format('to_tsvector(%L::regconfig, NEW.text)', l), ' || ' ORDER BY o),
                    'NULL')
    INTO forms
    FROM unnest(string_to_array(coalesce(langs, ''), ',')) WITH ORDINALITY AS u(l, o)
    WHERE l <> '';
    SELECT string_agg(format('to_tsvector(%L::regconfig, NEW.text)', l), ' || ' ORDER BY o)
    INTO forms_ascii
    FROM unnest(string_to_array(alist, ',')) WITH ORDINALITY AS u(l, o);
    -- A text of ASCII characters only (as many bytes as characters) takes
    -- the shorter list when there is one.
    IF alist <> langs THEN
        forms := format('CASE WHEN octet_length(NEW.text) = length(NEW.text) THEN %s ELSE %s END',
                        forms_ascii, forms);
        long_langs := format('CASE WHEN octet_length(NEW.text) = length(NEW.text) THEN %L ELSE %L END',
                             alist, langs);
    ELSE
        long_langs := quote_literal(coalesce(langs, ''));
    END IF;
    body := format($b$
-- Written by parley_messages_forms_define (src/db/sql/search_forms.sql).
BEGIN
    IF NEW.text IS NULL THEN
        NEW.tsv := to_tsvector('simple', '');
        NEW.forms := NULL;
    ELSIF octet_length(NEW.text) <= 32768 THEN
        NEW.tsv := to_tsvector('simple', NEW.text);
        NEW.forms := parley_forms_new(%1$s, NEW.tsv);
    ELSE
        NEW.tsv := parley_text_tsv(NEW.text);
        NEW.forms := parley_forms_new(parley_forms_vector(NEW.text, %2$s), NEW.tsv);
    END IF;
    RETURN NEW;
END
$b$, forms, long_langs);
    IF (SELECT prosrc FROM pg_proc WHERE oid = 'parley_messages_forms()'::regprocedure) = body THEN
        RETURN false;
    END IF;
    -- No writer of messages goes on with the body it read: a session
    -- reads the new one when it next takes its lock on messages, so one
    -- holding it now would write rows with the old list's forms (or none)
    -- after this commits, behind a fill that has passed them. This waits
    -- for those writers and holds new ones until the commit: 10 s without
    -- queueing, then queued with no limit of its own (a start's migration
    -- that rewrites the trigger: PostgreSQL sees a deadlock with a writer
    -- or an index build that waits on it). parley_search_forms_step holds
    -- the lock already.
    PERFORM parley_messages_hold_writers(200, 0);
    EXECUTE format('CREATE OR REPLACE FUNCTION parley_messages_forms() RETURNS trigger '
                   'LANGUAGE plpgsql AS %L', body);
    RETURN true;
END
$$;

-- parley_messages_forms_define for the target in the store, under the
-- lock the builder's step takes to change it (a daemon starting while
-- another changes the target would otherwise write the list it read
-- before that change's commit, for good). Called by this file at every
-- start.
CREATE OR REPLACE FUNCTION parley_messages_forms_sync() RETURNS boolean
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('parley_messages_forms', 0));
    RETURN parley_messages_forms_define((SELECT languages FROM search_forms WHERE target));
END
$$;

SELECT parley_messages_forms_sync();

-- The configurations the search uses now, comma-separated; '' when it
-- matches words as written only (no list chosen, or its column and index
-- not ready yet).
CREATE OR REPLACE FUNCTION parley_search_languages() RETURNS text
    LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT languages FROM search_forms WHERE active), '')
$$;

-- langs ("english, Russian") as the canonical list ('english,russian'):
-- each name resolved as a text search configuration of this database,
-- duplicates dropped, order kept. Raises 22023 naming the unknown entry
-- and the configurations there are.
CREATE OR REPLACE FUNCTION parley_search_languages_resolve(langs text) RETURNS text
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    out text[] := '{}';
    l text;
    c text;
BEGIN
    FOREACH l IN ARRAY string_to_array(coalesce(langs, ''), ',') LOOP
        l := btrim(l);
        CONTINUE WHEN l = '';
        BEGIN
            c := l::regconfig::text;
        EXCEPTION WHEN undefined_object OR invalid_name OR syntax_error THEN
            RAISE EXCEPTION USING ERRCODE = '22023',
                MESSAGE = format('search_languages: "%s" is not a text search configuration of '
                                 'this database; it has %s', l,
                                 (SELECT string_agg(cfgname, ', ' ORDER BY cfgname)
                                  FROM pg_ts_config));
        END;
        IF NOT c = ANY (out) THEN
            out := out || c;
        END IF;
    END LOOP;
    RETURN array_to_string(out, ',');
END
$$;

-- The query for messages.forms of q, the query as the simple
-- configuration reads it (websearch_to_tsquery), and langs: each word
-- becomes ('word' | its forms | the forms of its irregular group), so
-- that an excluded word excludes every form and OR works across forms; a
-- word of a phrase (words joined by <->, <N>) stays as written, on its A
-- positions. q itself for no langs. The words of the word's irregular
-- group (parley_irregular_group, search_irregular.sql: mice for mouse,
-- went for go) are matched through their forms ('mice', 'peopl'), which
-- every message holding them has, on any position: a form that is also
-- the message's word as written is kept as that word only
-- (parley_forms_new), and weighs as one (until 2026-11-29 they matched
-- the D positions only, 'mice':D, and weighed as other forms). A group word without a form in any of langs (a stop word of
-- each: was, has, did) or marked to match as written only ("=lives") is
-- matched as written, on any position.
CREATE OR REPLACE FUNCTION parley_forms_query(q tsquery, langs text) RETURNS tsquery
    LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    toks text[];
    n integer;
    t text;
    w text;
    f text;
    l text;
    seen text[];
    forms text;
    g text;
    gforms text[];
    out text := '';
BEGIN
    IF q IS NULL OR coalesce(langs, '') = '' THEN
        RETURN q;
    END IF;
    SELECT array_agg(m[1] ORDER BY o) INTO toks
    FROM regexp_matches(q::text, '(''(?:[^'']|'''')*''|<(?:-|[0-9]+)>|[&|!()])', 'g')
         WITH ORDINALITY AS r(m, o);
    n := coalesce(cardinality(toks), 0);
    FOR i IN 1 .. n LOOP
        t := toks[i];
        IF left(t, 1) <> '''' THEN
            out := out || ' ' || t;
        ELSIF (i > 1 AND toks[i - 1] ~ '^<') OR (i < n AND toks[i + 1] ~ '^<') THEN
            out := out || ' ' || t || ':A';
        ELSE
            w := replace(replace(substr(t, 2, length(t) - 2), '''''', ''''), '\\', '\');
            forms := t;
            seen := ARRAY[w];
            FOREACH l IN ARRAY string_to_array(langs, ',') LOOP
                SELECT CASE WHEN count(*) = 1 THEN min(x) END INTO f
                FROM unnest(tsvector_to_array(to_tsvector(l::regconfig, w))) AS x;
                IF f IS NOT NULL AND NOT f = ANY (seen) THEN
                    seen := seen || f;
                    forms := forms || ' | ''' || replace(replace(f, '\', '\\'), '''', '''''')
                             || '''';
                END IF;
            END LOOP;
            FOREACH g IN ARRAY parley_irregular_group(w) LOOP
                gforms := '{}';
                IF left(g, 1) <> '=' THEN
                    FOREACH l IN ARRAY string_to_array(langs, ',') LOOP
                        SELECT CASE WHEN count(*) = 1 THEN min(x) END INTO f
                        FROM unnest(tsvector_to_array(to_tsvector(l::regconfig, g))) AS x;
                        IF f IS NOT NULL AND NOT f = ANY (gforms) THEN
                            gforms := gforms || f;
                        END IF;
                    END LOOP;
                END IF;
                IF cardinality(gforms) = 0 THEN
                    g := ltrim(g, '=');
                    IF NOT g = ANY (seen) THEN
                        seen := seen || g;
                        forms := forms || ' | ''' || replace(replace(g, '\', '\\'), '''', '''''')
                                 || '''';
                    END IF;
                ELSIF NOT gforms && seen THEN
                    -- (a form seen already: a stemmer relates g to a word
                    -- asked for, and every message holding g has that form)
                    FOREACH f IN ARRAY gforms LOOP
                        seen := seen || f;
                        forms := forms || ' | ''' || replace(replace(f, '\', '\\'), '''', '''''')
                                 || '''';
                    END LOOP;
                END IF;
            END LOOP;
            out := out || CASE WHEN cardinality(seen) > 1 THEN ' ( ' || forms || ' )'
                               ELSE ' ' || forms END;
        END IF;
    END LOOP;
    RETURN out::tsquery;
END
$$;

-- The pairs of adjacent words ('w1 w2', as parley_word_pairs gives them:
-- migration 030) that every message matching phr (parley_phrase_query's)
-- holds: of each phrase, its words joined by <-> two by two ('{}' for
-- none: words <N> apart give none).
CREATE OR REPLACE FUNCTION parley_phrase_pairs(phr tsquery) RETURNS text[]
    LANGUAGE sql IMMUTABLE AS $$
    SELECT coalesce(array_agg(DISTINCT a.word || ' ' || c.word), '{}')
    FROM parley_tsquery_tokens(phr) a
    JOIN parley_tsquery_tokens(phr) b ON b.ord = a.ord + 1 AND b.tok = '<->'
    JOIN parley_tsquery_tokens(phr) c ON c.ord = a.ord + 2
    WHERE a.positive AND c.positive
      AND a.tok = parley_tsquery_lexeme(a.word) AND c.tok = parley_tsquery_lexeme(c.word)
      AND octet_length(a.word) + octet_length(c.word) < 1000
$$;

-- Whether messages' index name is valid: true, false (being built, or
-- a build that failed), NULL (none of messages by that name).
CREATE OR REPLACE FUNCTION parley_search_index_valid(name text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT i.indisvalid FROM pg_index i
    WHERE i.indexrelid = to_regclass(name) AND i.indrelid = 'messages'::regclass
$$;

-- True once the phrases' index of word pairs (migration 030) is built.
CREATE OR REPLACE FUNCTION parley_search_pairs_ready() RETURNS boolean
    LANGUAGE sql STABLE AS $$
    SELECT coalesce(parley_search_index_valid('messages_pairs_idx'), false)
$$;

-- The exact phrases q (a query of words as written, without OR) requires,
-- as one query for messages.tsv, or NULL when it has none (or has OR). A
-- row with a phrase must have the phrase's words as written, so the exact
-- index finds the rows and checks the phrase on the stored vector (see
-- parley_search).
CREATE OR REPLACE FUNCTION parley_phrase_query(q tsquery) RETURNS tsquery
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN strpos(q::text, '|') = 0 THEN
        (SELECT string_agg(item, ' & ')::tsquery
         FROM unnest(string_to_array(q::text, ' & ')) AS item
         WHERE item ~ '<(-|[0-9]+)>' AND item !~ '^!')
    END
$$;

-- The builder's "index" step for messages' index name (what it serves:
-- what, for the log; on the expression expr), or NULL when it is valid.
-- Raises 55000 when a relation of that name exists that is not messages'
-- index: CREATE INDEX ... IF NOT EXISTS would skip it, and the builder
-- would ask again and again.
CREATE OR REPLACE FUNCTION parley_search_index_state(langs text, name text, what text, expr text)
    RETURNS jsonb LANGUAGE plpgsql STABLE AS $$
DECLARE
    valid boolean := parley_search_index_valid(name);
BEGIN
    IF valid IS NULL AND to_regclass(name) IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = '55000',
            MESSAGE = format('a relation named %s exists that is not the index of messages the '
                             'search builds: rename or drop it', name);
    END IF;
    IF coalesce(valid, false) THEN
        RETURN NULL;
    END IF;
    RETURN jsonb_build_object(
        'languages', langs, 'state', 'index', 'index', what,
        'create', format('CREATE INDEX CONCURRENTLY IF NOT EXISTS %I ON messages USING gin (%s)',
                         name, expr),
        'drop_invalid', CASE WHEN valid IS NOT NULL
                             THEN format('DROP INDEX CONCURRENTLY IF EXISTS %I', name) END);
END
$$;

-- One step of bringing the search to search_languages = p_langs, for the
-- daemon's builder (src/archive/search_forms.c). Resolves the list
-- (22023 for an unknown configuration), makes it the trigger's target and
-- answers JSON {"languages": L, "state": S, ...}:
--   "ready": L is in use now (exact words only for '');
--   "fill": rows written before L was asked for must be filled first
--       (parley_search_forms_fill until it says finished), then this step
--       again;
--   "index": the search's vector needs its index ("index":
--       "messages.forms"), or, once the list is in use, the phrases need
--       theirs ("phrase word pairs", migration 030): run "create" (after
--       "drop_invalid" when not null: what a failed build left), then
--       this step again.
-- The statements are built here, from constant names only.
CREATE OR REPLACE FUNCTION parley_search_forms_step(p_langs text) RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    langs text := parley_search_languages_resolve(p_langs);
    r search_forms;
    idx jsonb;
BEGIN
    INSERT INTO search_forms (languages) VALUES (langs) ON CONFLICT (languages) DO NOTHING;
    IF NOT (SELECT target FROM search_forms WHERE languages = langs) THEN
        -- A new target: rows written from now on get its forms; the
        -- others are filled again from the start (none to fill in an
        -- empty store, as before the first import). The lock of
        -- parley_messages_forms_sync: a daemon starting meanwhile writes
        -- the trigger after this commit.
        PERFORM pg_advisory_xact_lock(hashtextextended('parley_messages_forms', 0));
        -- The rows a fill locks before it writes messages, taken first: a
        -- fill holding them waits for this no longer than its batch.
        PERFORM 1 FROM search_forms WHERE target OR languages = langs FOR UPDATE;
        -- The writers of messages done and new ones held (as
        -- parley_messages_forms_define needs), before the store is seen
        -- empty or the fill starts: a row a writer adds from now on gets
        -- the new forms, and every earlier one is there to be filled. At
        -- most 5 s unqueued, then 2 s queued; the builder tries again later.
        PERFORM parley_messages_hold_writers(100, 2000);
        UPDATE search_forms SET target = false WHERE target;
        UPDATE search_forms
        SET target = true, filled = (langs = '' OR NOT EXISTS (SELECT 1 FROM messages)),
            fill_chat_id = NULL, fill_id = NULL,
            rows_filled = 0, started_at = now()
        WHERE languages = langs;
        PERFORM parley_messages_forms_define(langs);
    END IF;
    SELECT * INTO r FROM search_forms WHERE languages = langs;
    IF NOT r.filled THEN
        RETURN jsonb_build_object('languages', langs, 'state', 'fill',
                                  'rows_filled', r.rows_filled);
    END IF;
    IF langs <> '' THEN
        idx := parley_search_index_state(langs, 'messages_forms_idx', 'messages.forms',
                                         parley_search_vector_sql(''));
        IF idx IS NOT NULL THEN
            RETURN idx;
        END IF;
    END IF;
    IF NOT r.active THEN
        UPDATE search_forms SET active = false WHERE active;
        UPDATE search_forms SET active = true, ready_at = now() WHERE languages = langs;
    END IF;
    DELETE FROM search_forms WHERE NOT target AND NOT active;
    -- Then the phrases' index of word pairs (migration 030), whatever the
    -- list: the search uses it once it is valid.
    RETURN coalesce(parley_search_index_state(langs, 'messages_pairs_idx', 'phrase word pairs',
                                              'parley_word_pairs(tsv)'),
                    jsonb_build_object('languages', langs, 'state', 'ready'));
END
$$;

-- Fills messages.forms of the next p_batch rows (by key) for the target
-- list p_langs (resolved) and moves the cursor; JSON {"rows": rows done in
-- this call, "rows_filled": in all, "rows_estimate": the table's,
-- "finished": true when no row was left}. Rows written meanwhile got
-- their forms from the trigger. Raises 55000 when p_langs is no longer
-- the target (another daemon asked for another list).
CREATE OR REPLACE FUNCTION parley_search_forms_fill(p_langs text, p_batch integer)
    RETURNS jsonb
    LANGUAGE plpgsql AS $$
DECLARE
    r search_forms;
    last_chat bigint;
    last_id bigint;
    n bigint;
    -- as the trigger reads them (parley_messages_forms_define)
    alist text := CASE WHEN p_langs <> '' THEN parley_forms_ascii_list(p_langs) END;
BEGIN
    SELECT * INTO r FROM search_forms WHERE languages = p_langs AND target FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = '55000',
            MESSAGE = format('search_languages "%s" is no longer the one asked for', p_langs);
    END IF;
    WITH batch AS (
        SELECT m.chat_id, m.id FROM messages m
        WHERE r.fill_chat_id IS NULL OR (m.chat_id, m.id) > (r.fill_chat_id, r.fill_id)
        ORDER BY m.chat_id, m.id
        LIMIT greatest(p_batch, 1)),
    upd AS (
        UPDATE messages m
        SET forms = parley_forms_new(parley_forms_vector(m.text,
                                                         CASE WHEN octet_length(m.text) = length(m.text)
                                                              THEN alist ELSE p_langs END),
                                     m.tsv)
        FROM batch b WHERE m.chat_id = b.chat_id AND m.id = b.id
        RETURNING m.chat_id, m.id)
    SELECT count(*), (max(ARRAY[chat_id, id]))[1], (max(ARRAY[chat_id, id]))[2]
    INTO n, last_chat, last_id FROM upd;
    UPDATE search_forms
    SET fill_chat_id = coalesce(last_chat, fill_chat_id), fill_id = coalesce(last_id, fill_id),
        rows_filled = rows_filled + n, filled = (n = 0)
    WHERE languages = p_langs;
    RETURN jsonb_build_object(
        'rows', n, 'rows_filled', r.rows_filled + n, 'finished', n = 0,
        'rows_estimate', greatest((SELECT reltuples::bigint FROM pg_class
                                   WHERE oid = 'messages'::regclass), 0));
END
$$;

-- How far the build of the search vector's index is, as JSON {"phase",
-- "blocks_done", "blocks_total", "tuples_done", "tuples_total"}, or NULL
-- when none runs.
CREATE OR REPLACE FUNCTION parley_search_forms_progress() RETURNS jsonb
    LANGUAGE sql STABLE AS $$
    SELECT jsonb_build_object('phase', phase, 'blocks_done', blocks_done,
                              'blocks_total', blocks_total, 'tuples_done', tuples_done,
                              'tuples_total', tuples_total)
    FROM pg_stat_progress_create_index
    WHERE relid = 'messages'::regclass AND datname = current_database()
    LIMIT 1
$$;
