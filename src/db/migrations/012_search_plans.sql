-- 012_search_plans: parley_search with plans that use the indexes. The
-- version of migration 003 chose the matching mode inside one statement
-- (CASE), so no index could serve it, and it built the ranking and the
-- snippet of every hit before taking a page: seconds on a million
-- messages. Here each mode becomes its own parameterised statement
-- (EXECUTE ... USING: values are never spliced into the text):
--   * fulltext: m.tsv @@ query (GIN index on tsv);
--   * substring (CJK): the pairs of adjacent CJK characters of the terms
--     must all be in the message (a GIN index of each CJK message's pairs:
--     Chinese and Japanese words are mostly two characters, too short for
--     a trigram), then one ILIKE per term (the trigram index serves terms
--     of three characters or more), and one NOT ILIKE per -term;
--   * fuzzy: term <% text (trigram index, word similarity >= 0.5), checked
--     again with parley_fuzzy_score;
--   * regex: text ~* pattern (trigram index);
--   and only the filters given are added. The page is chosen first (rank
--   computed for every hit only when ordering by rank), and snippets are
--   made for the page alone. "count" is exact up to 1,000; past it the
--   answer says "countCapped": true (counting every hit of a common word,
--   or of a two-character CJK term no index can serve, costs more than the
--   page itself).
-- Results, modes, ranks and snippets are as before.
--
-- Its functions moved to src/db/sql/search.sql, except
-- parley_cjk_bigrams, which the index below uses
-- (repeatable files, applied at every start: src/db/sql/manifest).
-- The distinct pairs of adjacent characters of t that are both of a script
-- written without spaces (lower case).
CREATE FUNCTION parley_cjk_bigrams(t text) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT b), '{}')
    FROM (SELECT substr(lower(t), i, 2) AS b FROM generate_series(1, length(t) - 1) AS i) x
    WHERE b ~ '^[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f\uf900-\ufaff]{2}$'
$$;

CREATE INDEX messages_cjk_bigrams_idx ON messages USING gin (parley_cjk_bigrams(text))
    WHERE parley_has_cjk(text);
