"""``python -m tui`` runs ``compile-lab`` (the command line; no subcommand opens the app)."""

from tui.launch import main

raise SystemExit(main())
