-- 031_bot_update_batches: getUpdates batches received but not applied yet.
-- The Bot API forgets every update below the offset a getUpdates names, so
-- the poller may ask for the next batch only once the previous one is
-- durable. It used to be durable only once applied (its messages, chats,
-- files... and its offset in one transaction), so one batch was in flight
-- at a time. Now a batch is staged here with its offset in one short
-- transaction (parley_bot_stage), the next getUpdates goes out at once,
-- and the staged batches are applied in update_id order, several in one
-- transaction that also deletes them (parley_bot_apply_staged; both in
-- src/db/sql/telegram/bot.sql): each update is applied exactly once
-- across a crash. A row holds one batch, keyed by its first update_id;
-- the table stays a few rows long.
CREATE TABLE bot_update_batches (
    account_id      bigint NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    first_update_id bigint NOT NULL,
    updates         jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, first_update_id)
);
-- Kept a few seconds at most: stored as it comes, not compressed.
ALTER TABLE bot_update_batches ALTER COLUMN updates SET STORAGE EXTERNAL;
