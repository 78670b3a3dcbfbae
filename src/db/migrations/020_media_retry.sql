-- 020_media_retry: when a media download that failed for a passing reason
-- (no answer, a server error, a body cut short, a store that cannot be
-- written) is tried again. Such a row stays in state 'error' with
-- next_attempt_at set and is claimed again from then on, however many
-- attempts it took (src/upstream/tg_media.c doubles the wait each time, up
-- to telegram_media_retry_max_s). A refusal leaves it NULL: the old rule
-- (at most 5 attempts, 2 s * 2^attempts apart) applies.
ALTER TABLE media ADD COLUMN next_attempt_at timestamptz;
