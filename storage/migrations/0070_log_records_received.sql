-- Log records by when they were received, per project: the order `GET /api/v1/logs` lists them
-- in (storage/log_reads.py), and how retention finds the orphaned ones (records whose trace has
-- no spans, which go by their own received time: storage/retention.py). The records of a trace
-- go with the trace, through the primary key's (project, trace_id).
CREATE INDEX log_records_received ON log_records (project, received_at);
