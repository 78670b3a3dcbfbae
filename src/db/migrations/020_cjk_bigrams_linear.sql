-- 020_cjk_bigrams_linear: parley_cjk_bigrams (migration 012; the CJK
-- index is built on it) in linear time. The version of 012 took lower(t)
-- again for every position and tested each pair with a regex: quadratic in
-- the text's length, and 70 % of the time of loading a message with CJK
-- into messages (bench/README.md). Here the text is split into its runs of
-- such characters and the pairs are read within each run: the same pairs
-- for every text (tests/sql/search.sql compares both over a corpus of edge
-- cases), so the index stays valid and is not rebuilt.
CREATE OR REPLACE FUNCTION parley_cjk_bigrams(t text) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(DISTINCT substr(r, i, 2)), '{}')
    FROM regexp_split_to_table(lower(t),
             '[^\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f\uf900-\ufaff]+') AS r,
         generate_series(1, length(r) - 1) AS i
$$;
