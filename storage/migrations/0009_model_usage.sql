-- Token usage per model name of each trajectory, for pricing runs in trajectory summaries
-- without reading their documents: {"<model>": {"steps", "input_tokens", "output_tokens",
-- "cached_input_tokens"}} ("" = model not recorded). Money is not stored: it depends on the
-- price table in use (TRAJHUB_PRICES), applied when read.
-- A generated column, so every writer of `document` keeps it right without knowing about it.
CREATE FUNCTION trajhub_model_usage(document text) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(jsonb_object_agg(model, jsonb_build_object(
               'steps', steps, 'input_tokens', input_tokens, 'output_tokens', output_tokens,
               'cached_input_tokens', cached_input_tokens)), '{}'::jsonb)
    FROM (
        SELECT coalesce(s -> 'metadata' ->> 'model_name', '') AS model,
               count(*) AS steps,
               coalesce(sum((s -> 'model_info' ->> 'input_tokens')::bigint), 0) AS input_tokens,
               coalesce(sum((s -> 'model_info' ->> 'output_tokens')::bigint), 0)
                   AS output_tokens,
               coalesce(sum((s -> 'model_info' ->> 'input_read_cached_tokens')::bigint), 0)
                   AS cached_input_tokens
        FROM jsonb_array_elements(document::jsonb -> 'agent_steps') AS a,
             jsonb_array_elements(a -> 'steps') AS s
        WHERE s ->> 'type' = 'model'
        GROUP BY 1
    ) per_model
$$;

ALTER TABLE trajectories
    ADD COLUMN model_usage jsonb NOT NULL GENERATED ALWAYS AS (trajhub_model_usage(document))
    STORED;
