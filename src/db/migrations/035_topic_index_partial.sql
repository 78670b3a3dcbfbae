-- 035_topic_index_partial: the index of a chat's forum topics holds only
-- the messages that have a topic. messages_chat_topic_idx (001) held a key
-- for every message, most of which have none (every message outside a
-- forum): 62 bytes a message of a two-million-message Telegram archive
-- without forums, 9 % of the store's 1,255. Every query that reads it names
-- a topic (m.topic_id = $n, which PostgreSQL proves NOT NULL), so the
-- partial index serves them all. Built in the background (034) and
-- replacing the old index once valid.
SELECT parley_index_build('messages_topic_idx',
    'CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_topic_idx ON messages (chat_id, topic_id, id) '
    'WHERE topic_id IS NOT NULL',
    'messages_chat_topic_idx');
