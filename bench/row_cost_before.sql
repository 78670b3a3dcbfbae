-- bench/row_cost_before.sql: the parts of messages as they were before
-- issue #31 changed them, for bench/row_cost.sh's "all, before" twin (the
-- same rows, in the same run). Functions only, named bench_*; the script
-- puts them on the twin in place of today's.

-- The forms trigger of migration 025 to 9d9c835: the target list looked
-- up in search_forms for every row, the forms built by parley_forms_vector
-- (a loop over the list).
CREATE OR REPLACE FUNCTION bench_messages_forms_before() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := CASE WHEN NEW.text IS NULL OR octet_length(NEW.text) <= 65536
                    THEN to_tsvector('simple', coalesce(NEW.text, ''))
                    ELSE parley_text_tsv(NEW.text) END;
    NEW.forms := parley_forms_vector(NEW.text, (SELECT languages FROM search_forms WHERE target));
    RETURN NEW;
END
$$;
