-- search_near: near spellings (docs/search.md "Near spellings"). A search
-- that finds fewer than SEARCH_NEAR_FEW (3) messages, because a query word
-- is in none (neither as written nor in any of its forms) or in fewer
-- than SEARCH_NEAR_RARE (3) messages (a slip someone else made too), is
-- read again with that word replaced by a word of the archive's
-- vocabulary (search_words, migration 024) one edit away: a letter
-- inserted, deleted, replaced, or two neighbours swapped, for words of
-- SEARCH_NEAR_MIN_LEN (4) letters or more (a word found in a few messages
-- is read as itself or the near word, so its own hits stay). Of several
-- near words the one that makes the whole query find most messages of the
-- surface wins ("metting agenda": meeting, not setting). parley_search and
-- the other search tools call parley_search_near when they found few
-- messages and answer with the near reading when it finds more, its new
-- hits marked, saying which word was read as which. The three limits are
-- the constants of parley_search_near_limits.
--
-- Applied before search_words.sql (the fuzzy query uses parley_edits1); what
-- this file calls of search.sql is called from PL/pgSQL, at run time.
--
-- Why edits and not trigram similarity: a one-letter slip of a short word
-- shares few trigrams with the word ("metting" has a word similarity of
-- 0.45 with "meeting", "dota" 0.25 with "data"), so no similarity
-- threshold finds the slips without also finding many unrelated words;
-- the words one edit away are few (about 70 per letter of the word) and
-- each is one probe of the vocabulary's primary key.

-- SEARCH_NEAR_FEW, SEARCH_NEAR_RARE and SEARCH_NEAR_MIN_LEN (above), as
-- JSON {"few", "rare", "min_len"}.
CREATE OR REPLACE FUNCTION parley_search_near_limits() RETURNS jsonb
    LANGUAGE sql IMMUTABLE AS $$
    SELECT '{"few": 3, "rare": 3, "min_len": 4}'::jsonb
$$;

-- The words one edit away from w: deletions, transpositions of
-- neighbours, substitutions and insertions of a letter of w's alphabet
-- (Latin or Cyrillic, digits, and w's own characters).
CREATE OR REPLACE FUNCTION parley_edits1(w text) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH a AS (
        SELECT DISTINCT c FROM regexp_split_to_table(
            CASE WHEN w ~ '[а-яё]' THEN 'абвгдеёжзийклмнопрстуфхцчшщъыьэюя'
                 ELSE 'abcdefghijklmnopqrstuvwxyz' END || '0123456789' || w, '') AS c),
    p AS (SELECT i FROM generate_series(1, length(w) + 1) AS i)
    SELECT array_agg(DISTINCT v) FILTER (WHERE v <> w AND v <> '')
    FROM (SELECT left(w, i - 1) || substr(w, i + 1) AS v FROM p WHERE i <= length(w)
          UNION ALL
          SELECT left(w, i - 1) || substr(w, i + 1, 1) || substr(w, i, 1) || substr(w, i + 2)
          FROM p WHERE i < length(w)
          UNION ALL
          SELECT left(w, i - 1) || a.c || substr(w, i + 1) FROM p, a WHERE i <= length(w)
          UNION ALL
          SELECT left(w, i - 1) || a.c || substr(w, i) FROM p, a) x
$$;

-- The tokens of a tsquery's text: quoted lexemes (with a weight suffix
-- when there is one), operators and parentheses, in order; positive is
-- false for a lexeme under a negation ("!'x'" or "!( ... )").
CREATE OR REPLACE FUNCTION parley_tsquery_tokens(q tsquery)
    RETURNS TABLE (ord integer, tok text, word text, positive boolean)
    LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    toks text[];
    neg boolean[] := ARRAY[false];
    pending boolean := false;
    t text;
BEGIN
    IF q IS NULL THEN
        RETURN;
    END IF;
    SELECT array_agg(m[1] ORDER BY o) INTO toks
    FROM regexp_matches(q::text, '(''(?:[^'']|'''')*''(?::[A-D*]+)?|<(?:-|[0-9]+)>|[&|!()])', 'g')
         WITH ORDINALITY AS r(m, o);
    FOR i IN 1 .. coalesce(cardinality(toks), 0) LOOP
        t := toks[i];
        ord := i;
        tok := t;
        word := NULL;
        positive := NULL;
        IF t = '!' THEN
            pending := true;
        ELSIF t = '(' THEN
            neg := neg || (pending OR neg[cardinality(neg)]);
            pending := false;
        ELSIF t = ')' THEN
            neg := neg[1:greatest(cardinality(neg) - 1, 1)];
        ELSIF left(t, 1) = '''' THEN
            word := replace(replace(substring(t FROM '^''((?:[^'']|'''')*)'''), '''''', ''''),
                            '\\', '\');
            positive := NOT (pending OR neg[cardinality(neg)]);
            pending := false;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

-- w as a tsquery lexeme ('w', quotes doubled, backslashes escaped as
-- the tsquery input reads them), or NULL for a word too long to be one
-- (2,046 bytes).
CREATE OR REPLACE FUNCTION parley_tsquery_lexeme(w text) RETURNS text
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN octet_length(w) < 2047
                THEN '''' || replace(replace(w, '\', '\\'), '''', '''''') || '''' END
$$;

-- The words of qx (a query of words as written: parley_search_exact_query)
-- that may be misspelt: positive, of SEARCH_NEAR_MIN_LEN letters or more,
-- with a letter, in fewer than SEARCH_NEAR_RARE messages of the scope (the
-- chats p_chat_ids, else those of p_source, else every chat) as written or
-- in any form (langs), each with its near words of the vocabulary that are
-- in that many messages of the scope (one at least, for a word found
-- nowhere), the closest 8 by trigram similarity: [{"from": w, "seen":
-- messages holding w, "near": [..]}], or NULL when there is none. Reads
-- the vocabulary's new words too (merged every few seconds), so a word
-- stored a moment ago counts.
CREATE OR REPLACE FUNCTION parley_search_near_words(qx tsquery, langs text, p_source text,
                                                    p_chat_ids bigint[])
    RETURNS jsonb
    LANGUAGE plpgsql STABLE
    -- Every count goes through the indexes, never by reading the table.
    SET enable_seqscan = off
    SET jit = off
AS $$
DECLARE
    lim jsonb := parley_search_near_limits();
    rare integer := (lim ->> 'rare')::integer;
    w text;
    seen integer;
    edits text[];
    alts text[];
    out jsonb := '[]';
BEGIN
    IF qx IS NULL OR NOT parley_search_words_ready() THEN
        RETURN NULL;
    END IF;
    FOR w IN SELECT DISTINCT ON (t.word) t.word FROM parley_tsquery_tokens(qx) t
             WHERE t.positive AND char_length(t.word) >= (lim ->> 'min_len')::integer
               AND octet_length(t.word) < 2047
               AND t.word ~ '[[:alpha:]]' AND NOT parley_has_cjk(t.word)
             ORDER BY t.word, t.ord LOOP
        seen := parley_search_near_count(parley_tsquery_lexeme(w)::tsquery, langs, p_source,
                                         p_chat_ids, rare);
        CONTINUE WHEN seen >= rare;
        edits := parley_edits1(w);
        SELECT array_agg(v ORDER BY sim DESC, v) INTO alts
        FROM (SELECT v, similarity(w, v) AS sim
              FROM (SELECT s.word AS v FROM unnest(edits) e JOIN search_words s ON s.word = e
                    UNION
                    SELECT n.word FROM unnest(edits) e JOIN search_words_new n ON n.word = e) e
              WHERE char_length(v) >= 3 AND octet_length(v) < 2047
                AND parley_search_near_count(parley_tsquery_lexeme(v)::tsquery, langs, p_source,
                                             p_chat_ids, rare)
                    >= CASE WHEN seen > 0 THEN rare ELSE 1 END
              ORDER BY sim DESC, v
              LIMIT 8) x;
        IF cardinality(alts) > 0 THEN
            out := out || jsonb_build_object('from', w, 'seen', seen, 'near', to_jsonb(alts));
        END IF;
    END LOOP;
    RETURN CASE WHEN jsonb_array_length(out) > 0 THEN out END;
END
$$;

-- qx with every positive occurrence of the word w replaced by the
-- alternatives alts: one word as is; several ORed in parentheses, each
-- with the token's weight or prefix suffix (":*"), except in a phrase
-- (beside <-> or <N>), where a group would make the phrase's words match
-- any form on any position: there the last alternative alone (the near
-- word; parley_search_near_alts puts it last).
CREATE OR REPLACE FUNCTION parley_search_near_rewrite(qx tsquery, w text, alts text[])
    RETURNS tsquery LANGUAGE sql IMMUTABLE AS $$
    SELECT string_agg(CASE WHEN t.positive AND t.word = w THEN
                          CASE WHEN cardinality(alts) = 1 OR t.in_phrase
                               THEN parley_tsquery_lexeme(alts[cardinality(alts)]) || t.suffix
                               ELSE '( ' || (SELECT string_agg(parley_tsquery_lexeme(x) || t.suffix,
                                                               ' | ')
                                             FROM unnest(alts) x) || ' )' END
                      ELSE t.tok END, ' ' ORDER BY t.ord)::tsquery
    FROM (SELECT t.*, coalesce(substring(t.tok FROM '''(:[A-D*]+)$'), '') AS suffix,
                 coalesce(lag(t.tok) OVER o ~ '^<', false)
                 OR coalesce(lead(t.tok) OVER o ~ '^<', false) AS in_phrase
          FROM parley_tsquery_tokens(qx) t
          WINDOW o AS (ORDER BY t.ord)) t
$$;

-- How many messages of the scope (the chats p_chat_ids, else those of
-- p_source, else every chat) match qx in every form, counted to p_cap,
-- through the full-text indexes (the query is computed once, never per
-- row).
CREATE OR REPLACE FUNCTION parley_search_near_count(qx tsquery, langs text, p_source text,
                                                    p_chat_ids bigint[], p_cap integer)
    RETURNS integer
    LANGUAGE plpgsql STABLE AS $$
DECLARE
    fq tsquery := parley_forms_query(qx, langs);
    kinds text[] := parley_source_kinds(p_source);
    n integer;
BEGIN
    IF coalesce(langs, '') = '' THEN
        SELECT count(*) INTO n FROM (
            SELECT 1 FROM messages m
            WHERE m.tsv @@ qx
              AND (p_chat_ids IS NULL OR m.chat_id = ANY (p_chat_ids))
              AND (p_source IS NULL OR p_chat_ids IS NOT NULL
                   OR m.chat_id IN (SELECT c.id FROM chats c WHERE c.kind = ANY (kinds)))
            LIMIT p_cap) x;
    ELSE
        SELECT count(*) INTO n FROM (
            SELECT 1 FROM messages m
            WHERE (setweight(m.tsv, 'A') || m.forms) @@ fq
              AND (p_chat_ids IS NULL OR m.chat_id = ANY (p_chat_ids))
              AND (p_source IS NULL OR p_chat_ids IS NOT NULL
                   OR m.chat_id IN (SELECT c.id FROM chats c WHERE c.kind = ANY (kinds)))
            LIMIT p_cap) x;
    END IF;
    RETURN n;
END
$$;

-- The near reading of qx for the messages of the scope (p_chat_ids, else
-- p_source's chats, else all; the search's other filters are not applied
-- to the counts), when it finds more than p_have messages (what qx
-- found), or NULL: {"query": qx with each
-- misspelt word replaced (tsquery text), "corrections": [{"from", "to"}]}.
-- A word found nowhere is replaced by its near word; a word found in a
-- few messages by itself or its near word. Each misspelt word in turn
-- takes the near word under which the whole query finds most messages
-- (counted to 50; the other misspelt words read meanwhile as any of
-- their near words; ties to the closest spelling); a word whose near
-- words find no more than p_have is left as it is.
CREATE OR REPLACE FUNCTION parley_search_near(qx tsquery, langs text, p_source text,
                                              p_chat_ids bigint[], p_have integer)
    RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET enable_seqscan = off
    SET jit = off
AS $$
DECLARE
    words jsonb := parley_search_near_words(qx, langs, p_source, p_chat_ids);
    e jsonb;
    c text;
    best text;
    best_n integer;
    n integer;
    q tsquery;
    corr jsonb := '[]';
BEGIN
    IF words IS NULL THEN
        RETURN NULL;
    END IF;
    FOR e IN SELECT value FROM jsonb_array_elements(words) LOOP
        best := NULL;
        best_n := coalesce(p_have, 0);
        FOR c IN SELECT jsonb_array_elements_text(e -> 'near') LOOP
            q := qx;
            FOR i IN 0 .. jsonb_array_length(words) - 1 LOOP
                q := parley_search_near_rewrite(q, words -> i ->> 'from',
                         parley_search_near_alts(words -> i,
                             CASE WHEN words -> i ->> 'from' = e ->> 'from' THEN c
                                  ELSE (SELECT x ->> 'to' FROM jsonb_array_elements(corr) x
                                        WHERE x ->> 'from' = words -> i ->> 'from') END));
            END LOOP;
            n := parley_search_near_count(q, langs, p_source, p_chat_ids, 50);
            IF n > best_n THEN
                best := c;
                best_n := n;
            END IF;
        END LOOP;
        IF best IS NOT NULL THEN
            corr := corr || jsonb_build_object('from', e ->> 'from', 'to', best);
        END IF;
    END LOOP;
    IF jsonb_array_length(corr) = 0 THEN
        RETURN NULL;
    END IF;
    q := qx;
    FOR e IN SELECT value FROM jsonb_array_elements(words) LOOP
        c := (SELECT x ->> 'to' FROM jsonb_array_elements(corr) x WHERE x ->> 'from' = e ->> 'from');
        IF c IS NOT NULL THEN
            q := parley_search_near_rewrite(q, e ->> 'from', parley_search_near_alts(e, c));
        END IF;
    END LOOP;
    RETURN jsonb_build_object('query', q::text, 'corrections', corr);
END
$$;

-- What a misspelt word w (an element of parley_search_near_words) is read
-- as: its near word c, or w or c when w is in some messages; with c NULL
-- (not chosen yet), any of its near words (and w when it is in some).
CREATE OR REPLACE FUNCTION parley_search_near_alts(w jsonb, c text) RETURNS text[]
    LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN (w ->> 'seen')::integer > 0 THEN ARRAY[w ->> 'from'] ELSE '{}' END
           || CASE WHEN c IS NOT NULL THEN ARRAY[c]
                   ELSE ARRAY(SELECT jsonb_array_elements_text(w -> 'near')) END
$$;

-- The sentence an answer read with near words carries; p_have: how many
-- messages the query found as written.
CREATE OR REPLACE FUNCTION parley_search_near_note(p_q text, corr jsonb, p_have integer)
    RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN coalesce(p_have, 0) = 0
                THEN format('Nothing matches %s as written; these are near matches, read as %s.',
                            to_jsonb(p_q)::text, r)
                ELSE format('Only %s message%s match%s %s as written; near matches (marked) are '
                            'added, read as %s.', p_have, CASE WHEN p_have = 1 THEN '' ELSE 's' END,
                            CASE WHEN p_have = 1 THEN 'es' ELSE '' END, to_jsonb(p_q)::text, r)
           END
    FROM (SELECT string_agg(format('%s → %s', x ->> 'from', x ->> 'to'), ', ') AS r
          FROM jsonb_array_elements(corr) x) y
$$;

-- The sentence an answer carries while the word forms asked for are
-- being brought in (src/archive/search_forms.c), or NULL.
CREATE OR REPLACE FUNCTION parley_search_forms_note() RETURNS text
    LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT format('Word forms (%s) are still being brought in (%s rows filled so far); '
                          'until then this search matched %s, so other forms of the words may '
                          'be missing.', f.languages, f.rows_filled,
                          CASE WHEN parley_search_languages() = '' THEN 'words as written only'
                               ELSE 'the forms of ' || parley_search_languages() END)
            FROM search_forms f
            WHERE f.target AND NOT f.active AND f.languages <> '');
END
$$;
