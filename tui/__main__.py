"""``python -m tui`` runs the compile-lab command line."""

from tui.cli import main

raise SystemExit(main())
