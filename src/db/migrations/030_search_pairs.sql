-- 030_search_pairs: phrases found through the pairs of adjacent words. A
-- quoted phrase of common words was checked on every row holding its
-- words (16,280 rows, 65 ms p95 for "search index" on a million
-- messages: GIN keeps no positions, and reading the rows was the time);
-- an index of each message's adjacent word pairs ('search index') finds
-- about the rows holding the phrase, which the stored vector then checks
-- (docs/search.md, "Phrases"; bench/README.md "RUM against GIN", where
-- RUM was measured and not taken). The index, messages_pairs_idx, is
-- built by the daemon's builder with CREATE INDEX CONCURRENTLY
-- (parley_search_forms_step, src/archive/search_forms.c), not here: on a
-- large store it takes minutes; the search uses it once it is valid.

-- The distinct pairs of adjacent words of v ('w1 w2'), read from its
-- positions: a vector of the simple configuration (messages.tsv), which
-- has no stop words, so adjacent positions are adjacent words. A pair of
-- 1,000 bytes or more is left out (a GIN entry holds at most 2,712: two
-- long tokens, such as signed URLs, must never fail a write or the
-- index's build); parley_phrase_pairs leaves the same pairs out of a
-- phrase's, so the pairs stay a condition every match meets. Part of the
-- table (the index is built on it): it stays here.
CREATE FUNCTION parley_word_pairs(v tsvector) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT a.lexeme || ' ' || b.lexeme), '{}')
    FROM (SELECT lexeme, unnest(positions) AS p FROM unnest(v)) a
    JOIN (SELECT lexeme, unnest(positions) AS p FROM unnest(v)) b ON b.p = a.p + 1
    WHERE octet_length(a.lexeme) + octet_length(b.lexeme) < 1000
$$;
