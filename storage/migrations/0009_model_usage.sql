-- Token usage per model name of each trajectory, so trajectory summaries can be priced without
-- reading their documents: {"<model>": {"steps", "input_tokens", "output_tokens",
-- "cached_input_tokens"}} ("" = model not recorded). The trajectory worker writes it
-- (normalizers.playback.model_usage). Money is not stored: it depends on the price table in use
-- (TRAJHUB_PRICES) and is computed when read.
ALTER TABLE trajectories ADD COLUMN model_usage jsonb NOT NULL DEFAULT '{}';

-- Trajectories derived before this migration: the same sums, from their documents.
UPDATE trajectories t SET model_usage = usage.value
FROM (
    SELECT project, trace_id, jsonb_object_agg(model, jsonb_build_object(
               'steps', steps, 'input_tokens', input_tokens, 'output_tokens', output_tokens,
               'cached_input_tokens', cached_input_tokens)) AS value
    FROM (
        SELECT t.project, t.trace_id, coalesce(s -> 'metadata' ->> 'model_name', '') AS model,
               count(*) AS steps,
               coalesce(sum((s -> 'model_info' ->> 'input_tokens')::bigint), 0) AS input_tokens,
               coalesce(sum((s -> 'model_info' ->> 'output_tokens')::bigint), 0)
                   AS output_tokens,
               coalesce(sum((s -> 'model_info' ->> 'input_read_cached_tokens')::bigint), 0)
                   AS cached_input_tokens
        FROM trajectories t,
             jsonb_array_elements(t.document::jsonb -> 'agent_steps') AS a,
             jsonb_array_elements(a -> 'steps') AS s
        WHERE t.document IS NOT NULL AND s ->> 'type' = 'model'
        GROUP BY 1, 2, 3
    ) per_model
    GROUP BY project, trace_id
) usage
WHERE t.project = usage.project AND t.trace_id = usage.trace_id;
