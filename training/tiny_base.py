# /// script
# requires-python = ">=3.10"
# dependencies = [
#     "transformers>=4.56",
#     "torch>=2.4",
#     "tokenizers>=0.20",
#     "huggingface_hub>=0.34",
# ]
# ///
"""Build the tiny base model and push it to a Hub model repo, so runs load it by repo id.

    tiny_base.py --repo console/tiny-causal-lm

The model is the one `--base-model tiny-random` builds on the job (`jobkit.models`: a
LlamaForCausalLM, hidden 64, 2 layers, random weights), with a byte-level BPE tokenizer trained on
a fixed English corpus instead of the run's dataset: one base that every tenant's run shares, as a
Hub base is. It exists for the embedded server's local Hub (`console demo` pushes it there once):
a local run then names it like any Hub model, and `from_pretrained` loads it through
$HF_ENDPOINT. With random weights it is worth nothing on HF Jobs.

Pushes with HF_TOKEN to $HF_ENDPOINT (huggingface.co without it); a repo whose `main` already holds
a `config.json` is left as it is. The last line is `VERDICT: PASS base=<repo>` or `VERDICT: FAIL`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from jobkit.models import TINY_CAUSAL_CONFIG, build_tiny_causal_lm  # noqa: E402

MAX_LENGTH = 512
SEED = 0
CORPUS = (
    "Hi, thanks for reaching out. Your order is on its way and should arrive by Friday.",
    "The warranty covers parts and labour for two years from the date of purchase.",
    "Please send a photo of the receipt and the serial number, and we will open a claim.",
    "Shipment 4411 left the depot at 08:15 and is due at the customs office at noon.",
    "To reset your password, open Settings, choose Account, then Security, and follow the link.",
    "Restart the router, wait thirty seconds, and check that the green light stays on.",
    "We are open Monday to Saturday from 9 am to 6 pm; on Sunday we close at 1 pm.",
    "The claim was approved: the refund of 120 euros goes to your card within five days.",
    "Your flight was delayed by more than three hours, so you are entitled to compensation.",
    "Question: how long does delivery take? Answer: two to four working days.",
    "Error 503 means the service is busy; try again in a minute or contact the helpdesk.",
    "Dear customer, we are sorry for the trouble. A replacement part ships today.",
)
"""What the tokenizer learns its merges from (any byte still encodes: the BPE is byte-level)."""


def build(folder: Path, repo: str) -> None:
    model, tokenizer = build_tiny_causal_lm(
        [{"text": line} for line in CORPUS * 4], MAX_LENGTH, SEED, repo
    )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (folder / "README.md").write_text(
        "---\nlibrary_name: transformers\ntags: [console, tiny, random-weights]\n---\n"
        f"# {repo}\n\nA tiny LlamaForCausalLM ({TINY_CAUSAL_CONFIG['hidden_size']} hidden, "
        f"{TINY_CAUSAL_CONFIG['num_hidden_layers']} layers) with random weights and a byte-level BPE "
        "tokenizer: the base of the console's local runs, which train LoRA adapters on it in seconds "
        "on a CPU. Its outputs mean nothing.\n",
        encoding="utf-8",
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="tiny_base.py", description=__doc__.splitlines()[0])
    p.add_argument("--repo", required=True, help="the model repo to push to (org/name)")
    args = p.parse_args(argv)
    from huggingface_hub import HfApi

    try:
        api = HfApi()
        api.create_repo(args.repo, exist_ok=True)
        if api.file_exists(args.repo, "config.json"):
            print(f"VERDICT: PASS base={args.repo} (already there)", flush=True)
            return 0
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp), args.repo)
            api.upload_folder(repo_id=args.repo, folder_path=tmp, commit_message="tiny random base model")
    except Exception as e:  # noqa: BLE001 - one line the caller can read, whatever failed
        print(f"VERDICT: FAIL push_failed: {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}",
              flush=True)
        return 1
    print(f"VERDICT: PASS base={args.repo}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
