-- 026_events: the store tells every daemon on it what changed. A write
-- of messages (an import's batch, live sync, a tool) sends one NOTIFY on
-- the channel parley_events at commit, with the chats it touched (and the
-- messages, for a small write or an edit), so that a 2026-07-28
-- subscriptions/listen on any daemon of this database hears of a resource
-- another daemon wrote (resources/updated). LISTEN stays on the primary;
-- NOTIFY is transactional (nothing for a rolled-back write) and the
-- payload is bounded (8000 bytes): at most 200 chats and 50 messages.

-- Owned by src/db/sql/events.sql from here on; the triggers need it now.
CREATE FUNCTION parley_messages_notify() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN NULL;
END
$$;

-- Inserts: once per statement (an import batch is one notification).
CREATE TRIGGER messages_notify_insert AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION parley_messages_notify();
-- Edits: a row trigger on what an edit changes (most updates touch
-- neither: media, reactions, the search fills).
CREATE TRIGGER messages_notify_update AFTER UPDATE OF text, edit_date ON messages
    FOR EACH ROW WHEN (OLD.text IS DISTINCT FROM NEW.text OR OLD.edit_date IS DISTINCT FROM NEW.edit_date)
    EXECUTE FUNCTION parley_messages_notify();
