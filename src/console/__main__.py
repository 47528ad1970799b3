"""`python -m console` runs the same entry point as the `console` command."""

from console.cli import main

raise SystemExit(main())
