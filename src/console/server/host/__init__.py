"""Jobs on this host: the runner, the sandbox, the limits and tokens each job gets, its volumes and usage."""
