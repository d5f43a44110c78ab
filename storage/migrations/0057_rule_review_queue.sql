-- An online rule's failures go to an annotation queue, for people to review (docs/rules.md
-- §9): a run whose score is an error, or a number below `fail_below`, adds its trajectory to the
-- project's queue named `review_queue` (migration 0060 makes the queues; a rule names one by name,
-- so either may be created first, and a queue deleted later just stops receiving).
ALTER TABLE rules ADD COLUMN review_queue text;
ALTER TABLE rules ADD COLUMN fail_below double precision NOT NULL DEFAULT 1.0
    CHECK (fail_below BETWEEN 0 AND 1);
