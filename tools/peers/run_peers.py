#!/usr/bin/env python3
"""attn-bench's peer runner: python3 tools/peers/run_peers.py DUMP_DIR --out RESULTS.jsonl.
See tools/peers/attn_peers/cli.py and docs/peers.md."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from attn_peers.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
