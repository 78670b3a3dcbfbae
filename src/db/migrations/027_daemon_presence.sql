-- 027_daemon_presence: a claim belongs to a daemon that is alive. Each
-- daemon holds, on a connection of its own, the session-level advisory
-- lock "parley_daemon:<owner>" (db/lock.h; owner is host:pid:random) for
-- as long as it runs; when it dies (kill -9, a crash, a lost host) its
-- connection closes and PostgreSQL releases the lock at once. A sync job
-- or a media download claimed by an owner whose lock is gone is taken
-- over at the next claim of another daemon (parley_daemon_alive,
-- src/db/sql/presence.sql), within seconds instead of after the 120 s
-- lease or the 10-minute media claim. Media rows now say who downloads
-- them; the claim functions take the owner (a new argument: dropped here,
-- made again by src/db/sql/telegram/bot.sql).
ALTER TABLE media ADD COLUMN claimed_by text;
DROP FUNCTION IF EXISTS parley_bot_media_claim(bigint, integer);
DROP FUNCTION IF EXISTS parley_bot_media_claim_one(bigint, bigint);
