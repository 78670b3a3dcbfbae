-- 014_job_classes: sync job classes are namespaced by the connector that
-- runs them ("telegram.sync", "telegram.metadata", later "bluesky.refresh"),
-- so each connector's executors claim only their own jobs. The classes
-- before were all Telegram's. A class has no default: whoever queues a job
-- names it.
ALTER TABLE sync_jobs DROP CONSTRAINT sync_jobs_class_check;
ALTER TABLE sync_jobs ALTER COLUMN class DROP DEFAULT;
UPDATE sync_jobs SET class = 'telegram.' || class WHERE class NOT LIKE '%.%';
ALTER TABLE sync_jobs ADD CONSTRAINT sync_jobs_class_check
    CHECK (class ~ '^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$');
