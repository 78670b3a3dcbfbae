-- 033_agent_file_ident: which file an agent transcript's offset belongs to
-- (its device and inode, "dev:ino"), so that a transcript replaced by
-- another file under the same name is read again from its start instead
-- of from the old file's offset.
ALTER TABLE agent_files ADD COLUMN ident text;
