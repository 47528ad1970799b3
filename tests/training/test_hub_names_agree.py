"""The training scripts run on a job without the console installed, so the Hub names they write
(each run's branch, the live tag, the checkpoint folder, the promote policies) are spelled in
training/jobkit/run.py and again in the console that reads them: they must be the same."""

from __future__ import annotations

from console import adapters, jobspec


def test_the_recipes_and_the_console_name_branches_tags_and_checkpoints_alike(run_rules):
    assert run_rules.RUN_BRANCH_PREFIX == adapters.RUN_BRANCH_PREFIX
    assert run_rules.LIVE_TAG == adapters.LIVE_TAG
    assert run_rules.CHECKPOINT_DIR == adapters.CHECKPOINT_DIR
    assert run_rules.PROMOTE_POLICIES == jobspec.PROMOTE_POLICIES
