-- Score configs: what a project's scores of one name must be — their type, and a number's
-- range or a category's list — so that scores of one name compare, and an annotation queue
-- (migration 0060) can name the scores its reviewers give. Declared in
-- trajhub/records/scores.py (SCORE_CONFIG); a score of a name with no config is not checked.
CREATE TABLE score_configs (
    project     text             NOT NULL,
    name        text             NOT NULL,
    data_type   text             NOT NULL CHECK (data_type IN ('number', 'boolean', 'category')),
    min_value   double precision,
    max_value   double precision,
    categories  text[],
    description text             NOT NULL DEFAULT '',
    PRIMARY KEY (project, name),
    CHECK (data_type = 'number' OR (min_value IS NULL AND max_value IS NULL)),
    CHECK (data_type = 'category' OR categories IS NULL),
    CHECK (min_value IS NULL OR max_value IS NULL OR min_value <= max_value)
);
