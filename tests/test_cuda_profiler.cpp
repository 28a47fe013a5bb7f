// The GPU profiler suite: filled in by the profiler work (CUPTI records in their scopes).
