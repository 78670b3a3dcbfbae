-- 015_inline: what the inline toolset's conversation ranking needs:
-- unaccent, so that "Zoë" and "zoe" match (case- and accent-insensitive
-- lookups), and the read marker of every chat imported so far moved to its
-- newest message (an import marks what it brings as read).
CREATE EXTENSION IF NOT EXISTS unaccent;
UPDATE chats c SET read_inbox_max_id = c.last_message_id
WHERE c.last_message_id IS NOT NULL AND c.read_inbox_max_id IS NULL;
