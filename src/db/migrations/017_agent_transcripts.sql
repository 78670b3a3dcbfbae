-- 017_agent_transcripts: what the import of agents' session transcripts
-- (parleyd import claude-code) keeps about each file it read, so that a
-- file that grew imports only its new lines: the byte offset up to which
-- complete lines were applied, advanced in the same transaction as them.
CREATE TABLE agent_files (
    path       text PRIMARY KEY,
    project    text NOT NULL,
    read_to    bigint NOT NULL DEFAULT 0,
    lines      bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);
