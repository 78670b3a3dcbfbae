-- memory_lane_schema: the memory-recovery database as its Django
-- application lays it out (the tables the memory toolset reads), for the
-- tests: parley never creates these in a real deployment, it only reads
-- them. "timestamp" (milliseconds) is when a message was said; created_at
-- is when the row was imported.
CREATE TABLE conversation_participants (name varchar(50) PRIMARY KEY,
    participant_type varchar(20) NOT NULL DEFAULT 'human');
CREATE TABLE eras (id uuid PRIMARY KEY, name varchar(100) UNIQUE NOT NULL,
    created_at timestamptz NOT NULL, is_current boolean NOT NULL DEFAULT false);
CREATE TABLE context_heaps (id uuid PRIMARY KEY, type varchar(20) NOT NULL DEFAULT 'fresh',
    created_at timestamptz NOT NULL, era_id uuid NOT NULL REFERENCES eras (id));
CREATE TABLE conversations_message (
    id uuid PRIMARY KEY, message_number int, content jsonb NOT NULL, looking_for_parent_id uuid,
    session_id uuid, "timestamp" bigint, eth_blockheight bigint,
    eth_block_offset int NOT NULL DEFAULT 0, created_at timestamptz NOT NULL,
    model_backend varchar(100), stop_reason varchar(50), source_file varchar(255),
    missing_from_markdown boolean NOT NULL DEFAULT false, input_tokens int, output_tokens int,
    cache_creation_input_tokens int, cache_read_input_tokens int,
    is_sidechain boolean NOT NULL DEFAULT false, is_synthetic_error boolean NOT NULL DEFAULT false,
    is_retry boolean NOT NULL DEFAULT false, is_continuation_message boolean NOT NULL DEFAULT false,
    apparent_duplicate boolean NOT NULL DEFAULT false, cwd text, git_branch varchar(255),
    client_version varchar(50), context_heap_id uuid REFERENCES context_heaps (id),
    parent_id uuid REFERENCES conversations_message (id),
    sender_id varchar(50) NOT NULL REFERENCES conversation_participants (name),
    UNIQUE (context_heap_id, message_number));
CREATE TABLE conversations_thought (message_ptr_id uuid PRIMARY KEY
    REFERENCES conversations_message (id), signature text NOT NULL);
CREATE TABLE conversations_tooluse (message_ptr_id uuid PRIMARY KEY
    REFERENCES conversations_message (id), tool_name varchar(100) NOT NULL,
    tool_id varchar(100) NOT NULL);
CREATE TABLE conversations_toolresult (message_ptr_id uuid PRIMARY KEY
    REFERENCES conversations_message (id), tool_use_id varchar(100) NOT NULL,
    is_error boolean NOT NULL DEFAULT false);
CREATE TABLE compacting_actions (id uuid PRIMARY KEY, looking_for_ending_message uuid,
    compact_trigger varchar(50), pre_compact_tokens int, created_at timestamptz NOT NULL,
    context_heap_id uuid UNIQUE REFERENCES context_heaps (id),
    continuation_message_id uuid REFERENCES conversations_message (id),
    ending_message_fk_id uuid UNIQUE REFERENCES conversations_message (id));
