-- 023_search_stats: statistics of the CJK pairs of each message, for the
-- planner. The CJK pair index (012) is partial, and PostgreSQL does not
-- use the statistics of a partial index's expression: it estimated a pair
-- found in 43,186 of a million messages at 28, and so read and sorted
-- every hit for a page that walking the newest messages gives in 2 ms.
-- ANALYZE (autovacuum's, or the next one run) fills these.
CREATE STATISTICS IF NOT EXISTS messages_cjk_bigrams_stats ON (parley_cjk_bigrams(text))
    FROM messages;
