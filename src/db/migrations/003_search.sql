-- 003_search: message search for the archive layer (src/archive/search.c).
-- parley_search returns the whole answer as one JSON document, built here.
--
-- Matching, per query:
--   * full text (default): websearch_to_tsquery('simple', q) against
--     messages.tsv: words, "phrases", OR, -exclusion; case-insensitive;
--     any script that separates words with spaces (English, Russian, ...);
--     ranked with ts_rank_cd, snippets by ts_headline;
--   * text in scripts without spaces between words (Chinese, Japanese,
--     Korean, Thai): every term must occur as a substring (case-insensitive),
--     -term must not; ranked by how early the first term occurs;
--   * fuzzy: every term must be similar (pg_trgm word similarity >= 0.5) to
--     a word of the text (misspellings, other word forms); ranked by the
--     mean similarity;
--   * regex: a case-insensitive POSIX regular expression, alone or beside a
--     query.
--
-- Its functions moved to src/db/sql/search.sql, except
-- parley_has_cjk, which an index of 012 uses
-- (repeatable files, applied at every start: src/db/sql/manifest).

-- True when s holds characters of scripts written without spaces.
CREATE FUNCTION parley_has_cjk(s text) RETURNS boolean
    LANGUAGE sql IMMUTABLE AS $$
    SELECT s ~ '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u0e00-\u0e7f\uf900-\ufaff]'
$$;
