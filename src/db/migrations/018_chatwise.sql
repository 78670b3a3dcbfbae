-- 018_chatwise: the text tools produced in AI-assistant chats (ChatWise's
-- meta.toolResult content[].text), kept apart from what was said so that
-- search can include it or leave it out and say where a hit came from.
-- Filled by whoever imports the message (parley_chatwise_ingest).
ALTER TABLE messages ADD COLUMN tool_text text;
CREATE INDEX messages_tool_text_trgm_idx ON messages USING gin (tool_text gin_trgm_ops)
    WHERE tool_text IS NOT NULL;
CREATE INDEX messages_tool_tsv_idx ON messages USING gin (to_tsvector('simple', tool_text))
    WHERE tool_text IS NOT NULL;
