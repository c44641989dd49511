"""Running models over datasets: what a run is (`runs`), a batch run (`batch`) on a local or Ray
executor (`executors`), background jobs for the dashboard (`jobs`), and live queries in a worker
process (`live`, `live_worker`)."""
