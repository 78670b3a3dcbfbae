-- 005_telegram_tools: the archive side of the telegram toolset
-- (src/toolsets/telegram/): JSON built by PostgreSQL for every tool.
--
-- Its functions moved to src/db/sql/telegram/ (one function per tool)
-- (repeatable files, applied at every start: src/db/sql/manifest).

-- ---- argument helpers -------------------------------------------------------

-- ---- records ---------------------------------------------------------------

-- ---- the tools -----------------------------------------------------------------
