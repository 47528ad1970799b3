"""The console's local cache of a namespace's jobs, and the last picture it showed (the snapshot).

- :mod:`~console.cache.store`: :class:`JobCache`, one SQLite file per backend and namespace in
  the data dir: every job seen (its table row, searchable, and its API document), paged and
  filtered in SQL so the history never has to live in memory;
- :mod:`~console.cache.snapshot`: the fleet rows and ledger summary last shown, with the time
  their data was read, painted at the next start before anything is read;
- :mod:`~console.cache.docs`: a job as the API sends it, and back to a `JobInfo`.

Headless: no Textual, no console.ui or console.server; huggingface_hub, the fleet and the ledger
are imported only by the functions that need them, so the first frame can be painted without.
"""

from __future__ import annotations

from console.cache.store import JobCache, cache_path, is_training_job, rank_of

__all__ = ["JobCache", "cache_path", "is_training_job", "rank_of"]
