-- The trajectory document and explanation are written by trajhub's own serializer and only
-- ever served whole: `text` keeps their bytes like `json` does, without PostgreSQL parsing
-- every document on the way in (a cost the trajectory worker waited on for each trace).
ALTER TABLE trajectories ALTER COLUMN document TYPE text, ALTER COLUMN explanation TYPE text;
ALTER TABLE trajectories ALTER COLUMN document SET STORAGE EXTERNAL;
ALTER TABLE trajectories ALTER COLUMN explanation SET STORAGE EXTERNAL;
